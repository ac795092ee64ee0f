#!/usr/bin/env python3
"""Lists Swift functions over 60 lines and files over 400 lines under Sources/.

    tools/long-functions.py [--function-limit N] [--file-limit N] [DIR...]

A function is a `func`, `init`, `deinit` or `subscript` declaration, or a computed `var` (accessors and closures count toward
the function that holds them); its length runs from the declaration's first line to its
closing brace. Strings and comments are skipped when braces are counted. A function may be
marked as a flat table with a `// long-functions: flat table` comment on the line before its
declaration: it is listed apart and does not make the exit status 1.
"""
import argparse
import os
import re
import sys

DECLARATION = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|class|final|'
                         r'override|mutating|nonmutating|convenience|required|nonisolated|@inlinable|@usableFromInline)\s+)*'
                         r'(func\s+[^\s(<]+|init[?!]?\s*[(<]|deinit\b|subscript\s*\(|var\s+\w+\s*:[^={]*\{)')
FLAT_TABLE = '// long-functions: flat table'


def strip(line, state):
    """The line without comments and string contents; `state` carries block comments and
    multi-line strings across lines."""
    out = []
    i = 0
    while i < len(line):
        if state['block']:
            end = line.find('*/', i)
            if end < 0:
                return ''.join(out)
            state['block'] = False
            i = end + 2
        elif state['multiline']:
            end = line.find('"""', i)
            if end < 0:
                return ''.join(out)
            state['multiline'] = False
            i = end + 3
        elif line.startswith('//', i):
            break
        elif line.startswith('/*', i):
            state['block'] = True
            i += 2
        elif line.startswith('"""', i):
            state['multiline'] = True
            i += 3
        elif line[i] == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == '\\' else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return ''.join(out)


def functions(path):
    """(name, first line, length, flat) of every function in the file."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    state = {'block': False, 'multiline': False}
    code = [strip(line, state) for line in lines]
    found = []
    for start, text in enumerate(code):
        match = DECLARATION.match(text)
        if not match:
            continue
        depth, opened = 0, False
        for end in range(start, len(code)):
            for ch in code[end]:
                if ch == '{':
                    depth, opened = depth + 1, True
                elif ch == '}':
                    depth -= 1
            if opened and depth <= 0:
                break
            if not opened and end > start and code[end].strip() == '':
                break  # a requirement in a protocol: no body
        if not opened:
            continue
        flat = start > 0 and FLAT_TABLE in lines[start - 1]
        found.append((match.group(1).split(':')[0].strip(' (<{'), start + 1, end - start + 1, flat))
    return found, len(lines) - (1 if lines and lines[-1] == '' else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--function-limit', type=int, default=60)
    parser.add_argument('--file-limit', type=int, default=400)
    parser.add_argument('dirs', nargs='*', default=['Sources'])
    args = parser.parse_args()
    long_functions, tables, long_files = [], [], []
    for top in args.dirs:
        for folder, _, names in sorted(os.walk(top)):
            for name in sorted(names):
                # `*.generated.swift` is made by a tool (the web page's files, tools/embed-ui.py): its length is theirs.
                if not name.endswith('.swift') or name.endswith('.generated.swift'):
                    continue
                path = os.path.join(folder, name)
                found, count = functions(path)
                if count > args.file_limit:
                    long_files.append((count, path))
                for function, line, length, flat in found:
                    if length > args.function_limit:
                        (tables if flat else long_functions).append((length, f'{path}:{line}', function))
    for length, where, function in sorted(long_functions, reverse=True):
        print(f'function {length:4d} lines  {where}  {function}')
    for length, where, function in sorted(tables, reverse=True):
        print(f'table    {length:4d} lines  {where}  {function} (flat table)')
    for count, path in sorted(long_files, reverse=True):
        print(f'file     {count:4d} lines  {path}')
    return 1 if long_functions or long_files else 0


if __name__ == '__main__':
    sys.exit(main())
