// The caller's grants (GET /v1/whoami), read as blobd reads them, to hide what they do not
// allow. The server decides: a hidden control is a courtesy, never the check.
let grants = [];

export function setGrants(list) {
  grants = list.map((text) => {
    const colon = text.indexOf(":");
    const action = colon < 0 ? text : text.slice(0, colon);
    const pattern = colon < 0 ? "*" : text.slice(colon + 1);
    return { action, pattern };
  });
}

function actions(action) { return action === "write" ? ["write", "create"] : [action]; }

/** Whether `pattern` holds the key `key`. */
function holdsKey(pattern, key) {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return key.startsWith(pattern.slice(0, -1));
  if (!pattern.includes("/")) return key.startsWith(pattern + "/");
  return key === pattern;
}

/** Whether `pattern` holds some key starting with `prefix`. */
function touches(pattern, prefix) {
  if (pattern === "*") return true;
  const start = pattern.endsWith("*") ? pattern.slice(0, -1) : pattern.includes("/") ? pattern : pattern + "/";
  return start.startsWith(prefix) || prefix.startsWith(start);
}

/** Whether `pattern` holds every key starting with `prefix`. */
function holdsEvery(pattern, prefix) {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return prefix.startsWith(pattern.slice(0, -1));
  if (!pattern.includes("/")) return prefix.startsWith(pattern + "/");
  return false;
}

export const may = (action, key) => grants.some((g) => actions(action).includes(g.action) && holdsKey(g.pattern, key));
export const mayUnder = (action, prefix) => grants.some((g) => actions(action).includes(g.action) && touches(g.pattern, prefix));
export const mayList = (prefix) => grants.some((g) => g.action === "read" && holdsEvery(g.pattern, prefix));
export const isAdminEverywhere = () => grants.some((g) => g.action === "admin" && g.pattern === "*");
export const mayAdmin = (bucket) => grants.some((g) => g.action === "admin" && holdsEvery(g.pattern, bucket + "/"));

/** Whether `pattern` holds every key of a bucket: `*`, `BUCKET` or `BUCKET/*` (of `bucket`,
 * or of any bucket when `bucket` is null). */
function wholeBucket(pattern, bucket) {
  if (pattern === "*") return true;
  const name = pattern.endsWith("/*") ? pattern.slice(0, -2) : pattern;
  return !/[/*]/.test(name) && (bucket === null || name === bucket);
}

/** Whether some grant of `action` holds a whole bucket (`bucket`, or some bucket when null):
 * making a bucket needs `write` on all of it, its versioning `admin`, removing it `delete`. */
export const mayBucket = (action, bucket = null) => grants.some((g) => g.action === action && wholeBucket(g.pattern, bucket));

/** The buckets the grants name (for a caller who may not list the top level). */
export function grantBuckets() {
  const names = new Set();
  for (const g of grants) if (g.pattern !== "*") names.add(g.pattern.split("/")[0].replace(/\*$/, ""));
  return [...names].filter(Boolean).sort();
}
