#!/usr/bin/env bash
# deploy/check.sh — checks the deploy/ files without Docker or Kubernetes.
#
# Run from anywhere (it works from the repository root): deploy/check.sh
# Prints one line per check: PASS, SKIP (a tool is missing) or FAIL, and exits non-zero
# when any check failed. Installs nothing and writes only to a temporary directory.
#
# Uses: bash, coreutils, grep, sed, python3 with PyYAML (python3-yaml), and when present
# systemd-analyze (systemd), nginx + openssl, kubeconform, hadolint, docker compose.
# Nothing listens on a network port: nginx -t binds only Unix sockets in the temp dir.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
DEPLOY=deploy
TMP=$(mktemp -d "${TMPDIR:-/tmp}/blobd-deploy-check.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

failures=0
pass() { printf 'PASS  %-20s %s\n' "$1" "${2:-}"; }
skip() { printf 'SKIP  %-20s %s\n' "$1" "${2:-}"; }
fail() { printf 'FAIL  %-20s %s\n' "$1" "${2:-}"; failures=$((failures + 1)); }
# Indented details under a result line.
details() { sed -e '/^[[:space:]]*$/d' -e 's/^/        /' "$@"; }

# A python3 that has PyYAML: the one on PATH, else Debian's.
PY=""
for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import yaml' >/dev/null 2>&1; then
        PY=$candidate
        break
    fi
done

# The structural checks, in Python. `pycheck NAME` runs one and prints its problems.
cat >"$TMP/checks.py" <<'PYTHON'
import os, re, sys, glob

DEPLOY = "deploy"
VARS = {
    "DATA_DIR": "path", "LISTEN": "listen", "MAX_BLOB_SIZE": "int", "TOKENS_FILE": "path",
    "PUBLIC_READ": "bool", "THREADS": "int", "UPLOAD_EXPIRY": "int", "MIN_FREE_BYTES": "int",
    "CONNECTION_TIMEOUT": "int", "MAX_CONNECTIONS": "int",
    "LOG_LEVEL": ("trace", "debug", "info", "notice", "warning", "error", "critical"),
    "LOG_FORMAT": ("text", "json"),
}
problems = []
def problem(text): problems.append(text)

def check_variable(where, name, value):
    """A BLOBD_* setting: a known name and a value blobd accepts."""
    if not name.startswith("BLOBD_"):
        return
    kind = VARS.get(name[len("BLOBD_"):])
    value = str(value)
    if kind is None:
        problem(f"{where}: {name} is not a blobd setting")
    elif kind == "int" and not re.fullmatch(r"[0-9]+", value):
        problem(f"{where}: {name}={value} is not a non-negative integer")
    elif kind == "bool" and value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        problem(f"{where}: {name}={value} is not true/false")
    elif kind == "listen" and not re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]+):[0-9]{1,5}", value):
        problem(f"{where}: {name}={value} is not HOST:PORT")
    elif kind == "path" and not value.startswith("/"):
        problem(f"{where}: {name}={value} should be an absolute path")
    elif isinstance(kind, tuple) and value not in kind:
        problem(f"{where}: {name}={value} is not one of {', '.join(kind)}")

def load_yaml(path):
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]

def unit_settings():
    settings = {}
    for line in open(f"{DEPLOY}/blobd.service"):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings

def dockerfile_uid():
    m = re.search(r"^USER\s+(\d+)", open(f"{DEPLOY}/Dockerfile").read(), re.M)
    return int(m.group(1)) if m else None

# --- systemd unit: the settings asked for ------------------------------------------------
def check_unit():
    s = unit_settings()
    want = {
        "User": "blobd", "Group": "blobd", "ExecStart": "/usr/local/bin/blobd",
        "EnvironmentFile": "/etc/blobd/blobd.env", "StateDirectory": "blobd",
        "ProtectSystem": "strict", "ReadWritePaths": "/var/lib/blobd", "ProtectHome": "yes",
        "PrivateTmp": "yes", "PrivateDevices": "yes", "NoNewPrivileges": "yes",
        "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
        "RestrictNamespaces": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
        "SystemCallArchitectures": "native", "CapabilityBoundingSet": "", "LimitNOFILE": "65536",
        "Restart": "on-failure", "KillSignal": "SIGTERM", "TimeoutStopSec": "30",
        "ExecReload": "/bin/kill -HUP $MAINPID",
    }
    for key, value in want.items():
        if value not in s.get(key, []):
            problem(f"blobd.service: want {key}={value}, have {s.get(key)}")
    if "DynamicUser" in s and s["DynamicUser"][-1] in ("yes", "true", "1"):
        problem("blobd.service: DynamicUser is not wanted")
    # The data dir of the example env file must be writable under ProtectSystem=strict.
    env = dict(read_env()[0])
    data = env.get("BLOBD_DATA_DIR", "")
    writable = [p for v in s.get("ReadWritePaths", []) for p in v.split()]
    writable += ["/var/lib/" + d for v in s.get("StateDirectory", []) for d in v.split()]
    if not any(data == w or data.startswith(w.rstrip("/") + "/") for w in writable):
        problem(f"BLOBD_DATA_DIR={data} is not under a writable path of the unit ({' '.join(writable)})")

# --- environment file --------------------------------------------------------------------
def read_env():
    active, commented = [], []
    for number, line in enumerate(open(f"{DEPLOY}/blobd.env"), 1):
        line = line.rstrip("\n")
        m = re.fullmatch(r"\s*#\s*(BLOBD_[A-Z_]+)=(.*)", line)
        if m:
            commented.append((m.group(1), m.group(2), number))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"([A-Z_][A-Z0-9_]*)=(\S*)", line)
        if not m:
            problem(f"blobd.env:{number}: not VARIABLE=value: {line!r}")
            continue
        active.append((m.group(1), m.group(2), number))
    return [(n, v) for n, v, _ in active], commented, active

def check_env():
    pairs, commented, active = read_env()
    for name, value, number in active + commented:
        check_variable(f"blobd.env:{number}", name, value)
        if not name.startswith("BLOBD_"):
            problem(f"blobd.env:{number}: {name} is not a BLOBD_* setting")
    env = dict(pairs)
    for name, value in {"BLOBD_DATA_DIR": "/var/lib/blobd/data", "BLOBD_LISTEN": "127.0.0.1:8080",
                        "BLOBD_MIN_FREE_BYTES": "1073741824", "BLOBD_LOG_FORMAT": "json"}.items():
        if env.get(name) != value:
            problem(f"blobd.env: want {name}={value}, have {env.get(name)}")
    if "BLOBD_TOKENS_FILE" not in [n for n, _, _ in commented] + list(env):
        problem("blobd.env: BLOBD_TOKENS_FILE example missing")

# --- compose -----------------------------------------------------------------------------
def check_compose():
    docs = load_yaml(f"{DEPLOY}/compose.yaml")
    if len(docs) != 1 or not isinstance(docs[0], dict):
        return problem("compose.yaml: want one YAML mapping")
    doc = docs[0]
    services = doc.get("services") or {}
    if len(services) != 1:
        problem(f"compose.yaml: want one service, have {list(services)}")
    for name, svc in services.items():
        build = svc.get("build") or {}
        context, dockerfile = build.get("context"), build.get("dockerfile", "Dockerfile")
        if context != "..":
            problem(f"compose.yaml: {name}.build.context should be '..' (the repo root), is {context!r}")
        elif not os.path.isfile(os.path.join(DEPLOY, context, dockerfile)):
            problem(f"compose.yaml: {name}: {dockerfile} not found in the build context")
        ports = [str(p) for p in svc.get("ports", [])]
        if not any(p.endswith(":8080") or p == "8080" for p in ports):
            problem(f"compose.yaml: {name} does not publish 8080: {ports}")
        named = set((doc.get("volumes") or {}).keys())
        mounts = [str(v) for v in svc.get("volumes", [])]
        if not any(m.split(":")[1:2] == ["/data"] and m.split(":")[0] in named for m in mounts):
            problem(f"compose.yaml: {name} has no named volume on /data: {mounts}")
        test = svc.get("healthcheck", {}).get("test", [])
        if "/healthz" not in " ".join(test if isinstance(test, list) else [test]):
            problem(f"compose.yaml: {name} healthcheck does not probe /healthz")
        if svc.get("restart") != "unless-stopped":
            problem(f"compose.yaml: {name}.restart should be unless-stopped")
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
        for key, value in env.items():
            check_variable(f"compose.yaml {name}.environment", key, value)
        for secret in svc.get("secrets", []) or []:
            source = secret if isinstance(secret, str) else secret.get("source")
            if source not in (doc.get("secrets") or {}):
                problem(f"compose.yaml: {name} uses undefined secret {source}")

# --- Kubernetes --------------------------------------------------------------------------
def check_k8s():
    docs = load_yaml(f"{DEPLOY}/kubernetes/blobd.yaml")
    by_kind = {}
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            problem(f"document {i}: not a mapping"); continue
        for field in ("apiVersion", "kind"):
            if not d.get(field):
                problem(f"document {i}: no {field}")
        name = (d.get("metadata") or {}).get("name")
        if not name or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
            problem(f"document {i} ({d.get('kind')}): bad or missing metadata.name {name!r}")
        by_kind.setdefault(d.get("kind"), []).append(d)
    api = {"Service": "v1", "Secret": "v1", "StatefulSet": "apps/v1"}
    for kind, version in api.items():
        for d in by_kind.get(kind, []):
            if d.get("apiVersion") != version:
                problem(f"{kind} {d['metadata']['name']}: apiVersion should be {version}")
    sets = by_kind.get("StatefulSet", [])
    if len(sets) != 1:
        return problem(f"want exactly one StatefulSet, have {len(sets)}")
    sts = sets[0]; spec = sts.get("spec") or {}
    where = f"StatefulSet {sts['metadata']['name']}"
    if spec.get("replicas") != 1:
        problem(f"{where}: replicas should be 1 (single-node service)")
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    headless = spec.get("serviceName")
    if not headless:
        problem(f"{where}: no serviceName")
    elif headless not in services:
        problem(f"{where}: serviceName {headless} is not a Service in the file")
    elif (services[headless].get("spec") or {}).get("clusterIP") != "None":
        problem(f"{where}: serviceName {headless} should be headless (clusterIP: None)")
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    match = ((spec.get("selector") or {}).get("matchLabels")) or {}
    if not match or any(labels.get(k) != v for k, v in match.items()):
        problem(f"{where}: selector {match} does not match template labels {labels}")
    for name, svc in services.items():
        sel = (svc.get("spec") or {}).get("selector") or {}
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            problem(f"Service {name}: selector {sel} does not select the pods {labels}")
        if 8080 not in [p.get("port") for p in (svc.get("spec") or {}).get("ports", [])]:
            problem(f"Service {name}: no port 8080")
    pod = template.get("spec") or {}
    if pod.get("terminationGracePeriodSeconds") != 30:
        problem(f"{where}: terminationGracePeriodSeconds should be 30")
    psc = pod.get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True:
        problem(f"{where}: pod securityContext.runAsNonRoot should be true")
    if psc.get("fsGroup") is None:
        problem(f"{where}: pod securityContext.fsGroup missing")
    uid = dockerfile_uid()
    if psc.get("runAsUser") not in (None, uid):
        problem(f"{where}: runAsUser {psc.get('runAsUser')} differs from the Dockerfile's USER {uid}")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
    if not claims:
        problem(f"{where}: no volumeClaimTemplates")
    secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
    for vname, v in volumes.items():
        if "secret" in v:
            sname = v["secret"].get("secretName")
            if sname not in secrets:
                problem(f"{where}: volume {vname} uses Secret {sname}, not defined in the file")
            else:
                keys = set((secrets[sname].get("stringData") or {})) | set((secrets[sname].get("data") or {}))
                for item in v["secret"].get("items", []):
                    if item.get("key") not in keys:
                        problem(f"{where}: Secret {sname} has no key {item.get('key')}")
            mode = v["secret"].get("defaultMode")
            if mode is None or mode & 0o007:
                problem(f"{where}: Secret volume {vname} defaultMode {mode!r} is not closed to others")
    containers = pod.get("containers", [])
    if not containers:
        problem(f"{where}: no containers")
    for c in pod.get("initContainers", []) + containers:
        cw = f"{where} container {c.get('name')}"
        if not c.get("image"):
            problem(f"{cw}: no image")
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            problem(f"{cw}: allowPrivilegeEscalation should be false")
        if sc.get("readOnlyRootFilesystem") is not True:
            problem(f"{cw}: readOnlyRootFilesystem should be true")
        if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
            problem(f"{cw}: capabilities should drop ALL")
        for m in c.get("volumeMounts", []):
            if m.get("name") not in volumes and m.get("name") not in claims:
                problem(f"{cw}: volumeMount {m.get('name')} has no volume")
    main = containers[0] if containers else {}
    cw = f"{where} container {main.get('name')}"
    port_names = {p.get("name") for p in main.get("ports", [])}
    if 8080 not in [p.get("containerPort") for p in main.get("ports", [])]:
        problem(f"{cw}: no containerPort 8080")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = ((main.get(probe) or {}).get("httpGet")) or {}
        if get.get("path") != path:
            problem(f"{cw}: {probe} should GET {path}, has {get.get('path')}")
        if get.get("port") not in port_names | {8080}:
            problem(f"{cw}: {probe} port {get.get('port')} is not a container port")
    res = main.get("resources") or {}
    if not res.get("requests") or not res.get("limits"):
        problem(f"{cw}: resources requests and limits wanted")
    mounts = {m.get("mountPath"): m.get("name") for m in main.get("volumeMounts", [])}
    if mounts.get("/data") not in claims:
        problem(f"{cw}: /data is not on the volumeClaimTemplate")
    env = {e.get("name"): e.get("value") for e in main.get("env", [])}
    for key, value in env.items():
        if value is not None:
            check_variable(cw, key, value)
    if env.get("BLOBD_DATA_DIR") != "/data":
        problem(f"{cw}: BLOBD_DATA_DIR should be /data")
    tokens = env.get("BLOBD_TOKENS_FILE")
    if tokens:
        if tokens != "/etc/blobd/tokens":
            problem(f"{cw}: BLOBD_TOKENS_FILE should be /etc/blobd/tokens")
        if not any(tokens.startswith(p.rstrip("/") + "/") for p in mounts):
            problem(f"{cw}: BLOBD_TOKENS_FILE {tokens} is on no mounted volume")
    if pod.get("enableServiceLinks") is not False and "blobd" in services:
        problem(f"{where}: enableServiceLinks should be false (Service 'blobd' would inject BLOBD_* variables)")

# --- Dockerfile (when hadolint is missing, and in any case the project's own rules) -----
def check_dockerfile():
    text = open(f"{DEPLOY}/Dockerfile").read()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    instructions = [l.strip() for l in lines if l.strip() and not l.strip().startswith("#")]
    froms = [l for l in instructions if re.match(r"FROM\s", l, re.I)]
    if len(froms) < 2:
        problem("Dockerfile: not multi-stage (fewer than two FROM)")
    if not froms or not re.search(r"\sAS\s+build\s*$", froms[0], re.I):
        problem("Dockerfile: the first stage should be `FROM ... AS build`")
    final = instructions[instructions.index(froms[-1]):] if froms else []
    if not any(re.match(r"COPY\s+--from=build\s", l) for l in final):
        problem("Dockerfile: the runtime stage copies nothing from the build stage")
    users = [l.split()[1] for l in final if re.match(r"USER\s", l)]
    if not users:
        problem("Dockerfile: the runtime stage sets no USER")
    elif users[-1].split(":")[0] in ("root", "0"):
        problem(f"Dockerfile: runs as root (USER {users[-1]})")
    elif not re.fullmatch(r"[0-9]+(:[0-9]+)?", users[-1]):
        problem(f"Dockerfile: USER {users[-1]} should be numeric so runAsNonRoot can verify it")
    def has(pattern, what):
        if not any(re.search(pattern, l) for l in final):
            problem(f"Dockerfile: runtime stage lacks {what}")
    has(r"^HEALTHCHECK\s.*curl\s+-fsS\b.*http://127\.0\.0\.1:8080/healthz", "HEALTHCHECK curl -fsS http://127.0.0.1:8080/healthz")
    has(r"^EXPOSE\s+8080\b", "EXPOSE 8080")
    has(r"^VOLUME\s+(\[\s*\"/data\"\s*\]|/data)\s*$", "VOLUME /data")
    has(r"^STOPSIGNAL\s+SIGTERM\s*$", "STOPSIGNAL SIGTERM")
    has(r"^ENV\s.*\bBLOBD_DATA_DIR=/data\b", "ENV BLOBD_DATA_DIR=/data")
    has(r"^ENV\s.*\bBLOBD_LISTEN=0\.0\.0\.0:8080\b", "ENV BLOBD_LISTEN=0.0.0.0:8080")
    for package in ("libmicrohttpd12", "libsqlite3-0", "libssl3", "curl", "ca-certificates"):
        has(rf"apt-get install .*\b{re.escape(package)}\b", f"package {package}")
    build = instructions[:instructions.index(froms[-1])] if froms else []
    for package in ("libmicrohttpd-dev", "libsqlite3-dev", "libssl-dev", "pkg-config"):
        if not any(re.search(rf"apt-get install .*\b{re.escape(package)}\b", l) for l in build):
            problem(f"Dockerfile: build stage lacks package {package}")
    if not any(re.search(r"swift build -c release --static-swift-stdlib", l) for l in build):
        problem("Dockerfile: no `swift build -c release --static-swift-stdlib`")
    # Every COPY source must exist in the build context (the repository root).
    for l in instructions:
        m = re.match(r"(COPY|ADD)\s+(.*)", l)
        if not m or "--from=" in l:
            continue
        args = [a for a in m.group(2).split() if not a.startswith("--")]
        for source in args[:-1]:
            if not glob.glob(source):
                problem(f"Dockerfile: COPY source {source} is not in the build context (repo root)")
    if uid_of_useradd(text) != dockerfile_uid():
        problem("Dockerfile: USER does not match the uid of the created user")

def uid_of_useradd(text):
    m = re.search(r"useradd\b[^\n]*--uid\s+(\d+)", re.sub(r"\\\n", " ", text))
    return int(m.group(1)) if m else None

# --- nginx: the directives asked for -----------------------------------------------------
def check_nginx():
    text = re.sub(r"#.*", "", open(f"{DEPLOY}/nginx/blobd.conf").read())
    for pattern, what in (
        (r"\bproxy_pass\s+http://", "proxy_pass"),
        (r"\bserver\s+127\.0\.0\.1:8080\b|proxy_pass\s+http://127\.0\.0\.1:8080", "upstream 127.0.0.1:8080"),
        (r"\bclient_max_body_size\s+0\s*;", "client_max_body_size 0"),
        (r"\bproxy_request_buffering\s+off\s*;", "proxy_request_buffering off"),
        (r"\bproxy_buffering\s+off\s*;", "proxy_buffering off"),
        (r"\bproxy_http_version\s+1\.1\s*;", "proxy_http_version 1.1"),
        (r"\bproxy_read_timeout\s+\d+", "proxy_read_timeout"),
        (r"\bproxy_send_timeout\s+\d+", "proxy_send_timeout"),
        (r"X-Forwarded-For\s+\$proxy_add_x_forwarded_for", "X-Forwarded-For"),
        (r"X-Forwarded-Proto\s+\$scheme", "X-Forwarded-Proto"),
        (r"\blisten\s+443\s+ssl\b", "listen 443 ssl"),
        (r"\bssl_certificate\s+\S+;", "ssl_certificate"),
        (r"\bssl_certificate_key\s+\S+;", "ssl_certificate_key"),
        (r"\blisten\s+80\s*;", "listen 80"),
        (r"\breturn\s+30[178]\s+https://", "HTTP to HTTPS redirect"),
    ):
        if not re.search(pattern, text):
            problem(f"nginx/blobd.conf: no {what}")
    for header in ("Range", "If-Range", "If-Match", "If-None-Match", "Authorization"):
        if re.search(rf"proxy_set_header\s+{header}\s", text, re.I):
            problem(f"nginx/blobd.conf: {header} should pass through unchanged")

# --- README ------------------------------------------------------------------------------
def check_readme():
    text = open(f"{DEPLOY}/README.md").read()
    for name in ("blobd.service", "blobd.env", "Dockerfile", "compose.yaml", "kubernetes/blobd.yaml",
                 "nginx/blobd.conf", "check.sh", "-f deploy/Dockerfile", "fsck"):
        if name not in text:
            problem(f"README.md does not mention {name}")

try:
    {"unit": check_unit, "env": check_env, "compose": check_compose, "k8s": check_k8s,
     "dockerfile": check_dockerfile, "nginx": check_nginx, "readme": check_readme}[sys.argv[1]]()
except Exception as error:  # YAML syntax errors, missing files, unexpected shapes
    import yaml
    kind = "YAML syntax error" if isinstance(error, yaml.YAMLError) else type(error).__name__
    problem(f"{kind}: {error}".replace("\n", " "))
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PYTHON

# pycheck LABEL NAME: one Python check, PASS or FAIL with its problems.
pycheck() {
    local label=$1 name=$2 out
    if [ -z "$PY" ]; then
        fail "$label" "needs python3 with PyYAML (Debian: python3-yaml)"
        return
    fi
    if out=$("$PY" "$TMP/checks.py" "$name" 2>&1); then
        pass "$label" "${3:-}"
    else
        fail "$label"
        printf '%s\n' "$out" | details
    fi
}

# --- systemd -----------------------------------------------------------------------------
pycheck unit-settings unit "deploy/blobd.service has the hardening and settings asked for"

if command -v systemd-analyze >/dev/null 2>&1; then
    # Verify a copy whose ExecStart is a binary that exists here.
    exe=""
    for candidate in "$PWD/.build/release/blobd" "$PWD/.build/debug/blobd" /bin/true; do
        if [ -x "$candidate" ]; then exe=$candidate; break; fi
    done
    mkdir -p "$TMP/unit"
    sed "s#^ExecStart=/usr/local/bin/blobd#ExecStart=$exe#" "$DEPLOY/blobd.service" >"$TMP/unit/blobd.service"
    out=$(systemd-analyze verify --man=no "$TMP/unit/blobd.service" 2>&1)
    rc=$?
    # Diagnostics about our unit are errors (unknown keys, bad values, missing binaries);
    # a missing `blobd` user is not one (it is created at install time).
    errors=$(printf '%s\n' "$out" | grep 'blobd\.service' | grep -Eiv "user.*blobd|group.*blobd|blobd.*(user|group)" || true)
    notes=$(printf '%s\n' "$out" | grep -v 'blobd\.service' | grep -v '^$' || true)
    if [ "$rc" -ne 0 ] || [ -n "$errors" ]; then
        fail systemd-verify "systemd-analyze verify (ExecStart=$exe), rc=$rc"
        printf '%s\n' "$out" | details
    else
        pass systemd-verify "systemd-analyze verify (ExecStart=$exe)"
        [ -n "$notes" ] && printf '%s\n' "$notes" | details
    fi
    if systemd-analyze --help 2>/dev/null | grep -q -- '--offline'; then
        # Exposure on systemd's 0-100 scale (shown as 0.0-10.0); 25 is well inside "OK".
        out=$(systemd-analyze security --offline=true --threshold=25 --no-pager "$TMP/unit/blobd.service" 2>&1)
        rc=$?
        level=$(printf '%s\n' "$out" | grep -o 'Overall exposure level for [^:]*: .*' | sed 's/.*: //')
        if [ "$rc" -eq 0 ]; then
            pass systemd-security "exposure ${level:-?} (threshold 2.5)"
        else
            fail systemd-security "exposure ${level:-?} above threshold 2.5, rc=$rc"
            printf '%s\n' "$out" | grep -E '✗|Overall' | details
        fi
    else
        skip systemd-security "this systemd-analyze has no --offline (systemd < 250)"
    fi
else
    skip systemd-verify "systemd-analyze not installed (Debian: systemd)"
    skip systemd-security "systemd-analyze not installed (Debian: systemd)"
fi

# --- environment file --------------------------------------------------------------------
pycheck env-file env "deploy/blobd.env: known BLOBD_* names, valid values"

# --- compose -----------------------------------------------------------------------------
pycheck compose compose "deploy/compose.yaml parses; build, port, volume, healthcheck"
if docker compose version >/dev/null 2>&1; then
    if out=$(docker compose -f "$DEPLOY/compose.yaml" config -q 2>&1); then
        pass compose-config "docker compose config"
    else
        fail compose-config "docker compose config"
        printf '%s\n' "$out" | details
    fi
else
    skip compose-config "docker compose not installed"
fi

# --- Kubernetes --------------------------------------------------------------------------
pycheck k8s-objects k8s "deploy/kubernetes/blobd.yaml parses; objects, probes, security"
if command -v kubeconform >/dev/null 2>&1; then
    # Downloads JSON schemas unless KUBECONFORM_FLAGS points at local ones
    # (e.g. KUBECONFORM_FLAGS="-schema-location /path/{{.ResourceKind}}.json").
    # shellcheck disable=SC2086
    if out=$(kubeconform -strict -summary ${KUBECONFORM_FLAGS:-} "$DEPLOY/kubernetes/blobd.yaml" 2>&1); then
        pass kubeconform "$(printf '%s\n' "$out" | tail -n 1)"
    else
        fail kubeconform
        printf '%s\n' "$out" | details
    fi
else
    skip kubeconform "kubeconform not on PATH (structure checked by k8s-objects)"
fi

# --- Dockerfile --------------------------------------------------------------------------
pycheck dockerfile dockerfile "multi-stage, non-root USER, HEALTHCHECK, VOLUME, COPY sources exist"
if command -v hadolint >/dev/null 2>&1; then
    if out=$(hadolint --failure-threshold error "$DEPLOY/Dockerfile" 2>&1); then
        pass hadolint "no errors${out:+ (warnings below)}"
        [ -n "$out" ] && printf '%s\n' "$out" | details
    else
        fail hadolint
        printf '%s\n' "$out" | details
    fi
else
    skip hadolint "hadolint not on PATH (rules checked by dockerfile)"
fi

# --- nginx -------------------------------------------------------------------------------
pycheck nginx-directives nginx "deploy/nginx/blobd.conf streams, proxies, redirects"

# nginx -t on the server blocks, wrapped in a minimal nginx.conf in the temp dir.
# nginx -t opens the listening sockets it checks (binds, then exits), so that it touches no
# network port (nor clashes with a running web server) the test copy listens on Unix sockets
# in the temp dir instead of :80 and :443; the certificate is a throw-away self-signed one.
nginx_test() {
    local n="$TMP/nginx" out warnings
    mkdir -p "$n/logs"
    if ! out=$(openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
            -subj /CN=blobd.example.com -keyout "$n/key.pem" -out "$n/cert.pem" 2>&1); then
        fail nginx-t "openssl could not make a test certificate"
        printf '%s\n' "$out" | details
        return
    fi
    sed -e "s#^\([[:space:]]*ssl_certificate\)[[:space:]].*#\1 $n/cert.pem;#" \
        -e "s#^\([[:space:]]*ssl_certificate_key\)[[:space:]].*#\1 $n/key.pem;#" \
        -e "s#^\([[:space:]]*listen[[:space:]]\{1,\}\)\[::\]:\([0-9]\{1,\}\)#\1unix:$n/v6-\2.sock#" \
        -e "s#^\([[:space:]]*listen[[:space:]]\{1,\}\)\([0-9]\{1,\}\)\([[:space:]]\|;\)#\1unix:$n/v4-\2.sock\3#" \
        "$DEPLOY/nginx/blobd.conf" >"$n/blobd.conf"
    if grep -Eq '^[[:space:]]*listen[[:space:]]+[^u[:space:]]' "$n/blobd.conf"; then
        fail nginx-t "a listen line could not be moved to a Unix socket; nginx -t not run"
        grep -E '^[[:space:]]*listen' "$n/blobd.conf" | details
        return
    fi
    cat >"$n/nginx.conf" <<EOF
pid $n/nginx.pid;
error_log $n/logs/error.log;
events {}
http {
    access_log off;
    client_body_temp_path $n/client_body;
    proxy_temp_path $n/proxy;
    fastcgi_temp_path $n/fastcgi;
    uwsgi_temp_path $n/uwsgi;
    scgi_temp_path $n/scgi;
    include $n/blobd.conf;
}
EOF
    if out=$(nginx -t -p "$n/" -e "$n/logs/startup.log" -c "$n/nginx.conf" 2>&1); then
        warnings=$(printf '%s\n' "$out" | grep -F '[warn]' || true)
        pass nginx-t "nginx -t on the server blocks ($(nginx -v 2>&1 | sed 's/.*: //'), listening on Unix sockets)"
        if [ -n "$warnings" ]; then printf '%s\n' "$warnings" | details; fi
    else
        fail nginx-t "nginx -t"
        printf '%s\n' "$out" | details
    fi
}
if command -v nginx >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1; then
    nginx_test
else
    skip nginx-t "nginx or openssl not installed (Debian: nginx, openssl)"
fi

# --- README ------------------------------------------------------------------------------
pycheck readme readme "deploy/README.md covers every file"

if [ "$failures" -gt 0 ]; then
    echo "deploy/check.sh: $failures check(s) failed"
    exit 1
fi
echo "deploy/check.sh: all checks passed"
