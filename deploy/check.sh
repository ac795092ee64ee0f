#!/usr/bin/env bash
# deploy/check.sh — checks the deploy/ files without Docker or Kubernetes.
#
# Run from anywhere (it works from the repository root): deploy/check.sh
# Prints one line per check: PASS, SKIP (a tool is missing) or FAIL, and exits non-zero
# when any check failed. Installs nothing and writes only to a temporary directory.
#
# Uses: bash, coreutils, grep, sed, python3 with PyYAML (python3-yaml), and when present
# systemd-analyze (systemd), nginx + openssl, kubeconform (or kubernetes-validate), hadolint,
# docker compose (or check-jsonschema).
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
    "DATA_DIR": "path", "LISTEN": "listen", "S3_LISTEN": "listen", "MAX_BLOB_SIZE": "size",
    "TOKENS_FILE": "path", "PUBLIC_READ": "bool", "THREADS": "int", "UPLOAD_EXPIRY": "duration",
    "MIN_FREE_BYTES": "size", "MAX_OPEN_UPLOADS": "int", "CONNECTION_TIMEOUT": "duration", "MAX_CONNECTIONS": "int",
    "SHUTDOWN_GRACE": "duration", "HEADER_TIMEOUT": "duration", "MIN_BODY_RATE": "size",
    "MAX_CONNECTIONS_PER_IP": "int", "TRUSTED_PROXY": "text", "PUBLIC_URL": "text",
    "LOG_LEVEL": ("trace", "debug", "info", "notice", "warn", "warning", "err", "error", "crit", "critical"),
    "LOG_FORMAT": ("text", "json"),
    # A cluster's settings.
    "INDEX": "index", "NODE_ID": "node", "RECLAIM_GRACE": "duration", "DB_CONNECTIONS": "int",
}
# What blobd accepts as --node-id; `blobd fsck` runs beside a cluster as node "fsck".
NODE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
RESERVED_NODE_IDS = {"fsck"}
problems = []
def problem(text): problems.append(text)

def check_variable(where, name, value):
    """A BLOBD_* setting: a known name and a value blobd accepts."""
    if not name.startswith("BLOBD_"):
        return
    kind = VARS.get(name[len("BLOBD_"):])
    # Compose fills ${VARIABLE} in at run time: check the rest of the value.
    value = re.sub(r"\$\{[^}]*\}", "VARIABLE", str(value))
    if kind is None:
        problem(f"{where}: {name} is not a blobd setting")
    elif kind == "int" and not re.fullmatch(r"[0-9]+", value):
        problem(f"{where}: {name}={value} is not a non-negative integer")
    elif kind == "bool" and value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        problem(f"{where}: {name}={value} is not true/false")
    elif kind == "listen" and not re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\s]*):[0-9]{1,5}", value):
        problem(f"{where}: {name}={value} is not HOST:PORT")
    elif kind == "path" and not value.startswith("/"):
        problem(f"{where}: {name}={value} should be an absolute path")
    elif kind == "size" and not re.fullmatch(r"[0-9]+ *([kmgt](i?b)?|b)?", value, re.IGNORECASE):
        problem(f"{where}: {name}={value} is not a size (bytes, or with a unit: 10G, 512MiB, 5GB)")
    elif kind == "duration" and not re.fullmatch(r"([0-9]+(\.[0-9]+)?[smhd])+|[0-9]+(\.[0-9]+)?", value.lower()):
        problem(f"{where}: {name}={value} is not a duration (seconds, or with a unit: 90s, 15m, 24h, 7d)")
    elif kind == "node" and (not NODE_ID.fullmatch(value) or value in RESERVED_NODE_IDS):
        problem(f"{where}: {name}={value} is not a node id (1-64 letters, digits, -_., not {', '.join(RESERVED_NODE_IDS)})")
    elif kind == "index" and value != "sqlite":
        url = postgres_url(value)
        if url is None:
            problem(f"{where}: {name} is neither sqlite nor a postgres://USER@HOST/DB URL")
    elif isinstance(kind, tuple) and value not in kind:
        problem(f"{where}: {name}={value} is not one of {', '.join(kind)}")

def postgres_url(value):
    """The parts of a postgres:// URL, or None if it is not one."""
    from urllib.parse import urlsplit
    try:
        url = urlsplit(value)
        url.port  # raises on a bad port
    except ValueError:
        return None
    if url.scheme not in ("postgres", "postgresql") or not url.hostname or not url.username \
            or not re.fullmatch(r"/[^/]+", url.path or ""):
        return None
    return url

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
                        "BLOBD_MIN_FREE_BYTES": "1G", "BLOBD_LOG_FORMAT": "json"}.items():
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
        if not any(p.endswith(":9000") or p == "9000" for p in ports):
            problem(f"compose.yaml: {name} does not publish 9000 (S3): {ports}")
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

# --- compose, cluster --------------------------------------------------------------------
def environment_of(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}

def depends_on(svc):
    deps = svc.get("depends_on") or {}
    return {d: {} for d in deps} if isinstance(deps, list) else deps

def check_compose_cluster():
    f = "compose-cluster.yaml"
    docs = load_yaml(f"{DEPLOY}/{f}")
    if len(docs) != 1 or not isinstance(docs[0], dict):
        return problem(f"{f}: want one YAML mapping")
    doc = docs[0]
    services = doc.get("services") or {}
    named = set((doc.get("volumes") or {}).keys())
    def mounts(svc):
        return [str(v).split(":") for v in svc.get("volumes", [])]
    for name, svc in services.items():
        for secret in svc.get("secrets", []) or []:
            source = secret if isinstance(secret, str) else secret.get("source")
            if source not in (doc.get("secrets") or {}):
                problem(f"{f}: {name} uses undefined secret {source}")

    # PostgreSQL 15 with its own volume, a pg_isready healthcheck and no password in the file.
    pgs = [n for n, svc in services.items() if str(svc.get("image", "")).startswith("postgres:")]
    if len(pgs) != 1:
        return problem(f"{f}: want one postgres service, have {pgs}")
    pg = pgs[0]; psvc = services[pg]; penv = environment_of(psvc)
    if psvc["image"] != "postgres:15":
        problem(f"{f}: {pg}.image should be postgres:15, is {psvc['image']}")
    for key in ("POSTGRES_USER", "POSTGRES_DB"):
        if penv.get(key) != "blobd":
            problem(f"{f}: {pg} {key} should be blobd, is {penv.get(key)!r}")
    password = penv.get("POSTGRES_PASSWORD")
    if password is not None and not re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:?[?-][^}]*)?\}", password):
        problem(f"{f}: {pg} POSTGRES_PASSWORD should come from a variable, not be written in the file")
    if password is None and not penv.get("POSTGRES_PASSWORD_FILE", "").startswith("/run/secrets/"):
        problem(f"{f}: {pg} has neither POSTGRES_PASSWORD from a variable nor POSTGRES_PASSWORD_FILE from a secret")
    if not any(m[1:2] == ["/var/lib/postgresql/data"] and m[0] in named for m in mounts(psvc)):
        problem(f"{f}: {pg} has no named volume on /var/lib/postgresql/data")
    test = (psvc.get("healthcheck") or {}).get("test", [])
    if "pg_isready" not in " ".join(test if isinstance(test, list) else [test]):
        problem(f"{f}: {pg} healthcheck does not run pg_isready")

    # The blobd nodes: every service with BLOBD_INDEX.
    nodes = {n: svc for n, svc in services.items() if "BLOBD_INDEX" in environment_of(svc)}
    if len(nodes) < 2:
        problem(f"{f}: want at least two blobd nodes (services with BLOBD_INDEX), have {list(nodes)}")
    node_ids, data_volumes, ports = {}, set(), {"BLOBD_LISTEN": set(), "BLOBD_S3_LISTEN": set()}
    images = {str(services_of_compose().get("blobd", {}).get("image", "blobd:latest"))}
    for name, svc in nodes.items():
        where = f"{f} {name}"
        env = environment_of(svc)
        for key, value in env.items():
            check_variable(f"{where}.environment", key, value)
        build = svc.get("build") or {}
        if build:
            if build.get("context") != "..":
                problem(f"{where}: build.context should be '..' (the repo root), is {build.get('context')!r}")
            elif not os.path.isfile(os.path.join(DEPLOY, "..", build.get("dockerfile", "Dockerfile"))):
                problem(f"{where}: {build.get('dockerfile')} not found in the build context")
        elif svc.get("image") not in images:
            problem(f"{where}: neither built from deploy/Dockerfile nor compose.yaml's image {images}")
        raw = env["BLOBD_INDEX"]
        url = postgres_url(re.sub(r"\$\{[^}]*\}", "VARIABLE", raw))
        if url:
            if url.hostname != pg:
                problem(f"{where}: BLOBD_INDEX host {url.hostname} is not the postgres service {pg}")
            if url.port not in (None, 5432) or url.username != "blobd" or url.path != "/blobd":
                problem(f"{where}: BLOBD_INDEX should be postgres://blobd:...@{pg}:5432/blobd")
            secret = re.match(r"[^:]+://[^:@/]+:([^@]*)@", raw)
            if secret and not re.fullmatch(r"\$\{[^}]*\}", secret.group(1)):
                problem(f"{where}: the password in BLOBD_INDEX should come from a variable, not be written in the file")
        node = env.get("BLOBD_NODE_ID")
        if not node:
            problem(f"{where}: no BLOBD_NODE_ID (the host name would be the container id)")
        elif node in node_ids:
            problem(f"{where}: BLOBD_NODE_ID {node} is also {node_ids[node]}'s: two nodes must never share an id")
        else:
            node_ids[node] = name
        if env.get("BLOBD_LISTEN") != "0.0.0.0:8080":
            problem(f"{where}: BLOBD_LISTEN should be 0.0.0.0:8080, is {env.get('BLOBD_LISTEN')}")
        for key in ports:
            if env.get(key):
                ports[key].add(env[key].rsplit(":", 1)[1])
        data = env.get("BLOBD_DATA_DIR", "/data")  # the image's default
        shared = [m[0] for m in mounts(svc) if m[1:2] == [data] and m[0] in named]
        if not shared:
            problem(f"{where}: no named volume on the data dir {data}")
        data_volumes.update((m, data) for m in shared)
        if depends_on(svc).get(pg, {}).get("condition") != "service_healthy":
            problem(f"{where}: should depend on {pg} being service_healthy")
        test = (svc.get("healthcheck") or {}).get("test", [])
        if "/readyz" not in " ".join(test if isinstance(test, list) else [test]):
            problem(f"{where}: healthcheck does not probe /readyz")
        if svc.get("restart") != "unless-stopped":
            problem(f"{where}: restart should be unless-stopped (blobd exits when PostgreSQL is away at start)")
        if svc.get("ports"):
            problem(f"{where}: publishes ports; clients should go through the load balancer")
    if len(data_volumes) > 1:
        problem(f"{f}: the nodes do not share one data volume: {sorted(data_volumes)}")

    # nginx in front, with deploy/nginx/cluster.conf, balancing exactly these nodes.
    lbs = [n for n, svc in services.items() if str(svc.get("image", "")).startswith("nginx")]
    if len(lbs) != 1:
        return problem(f"{f}: want one nginx service, have {lbs}")
    lb = services[lbs[0]]
    confs = [m for m in mounts(lb) if m[0].endswith("nginx/cluster.conf")]
    if not confs:
        problem(f"{f}: {lbs[0]} does not mount nginx/cluster.conf")
    for m in confs:
        if not os.path.isfile(os.path.join(DEPLOY, m[0])):
            problem(f"{f}: {m[0]} does not exist (relative to deploy/)")
        if not (m[1:2] and m[1].startswith("/etc/nginx/conf.d/") and m[1].endswith(".conf")):
            problem(f"{f}: {m[0]} should be mounted as /etc/nginx/conf.d/*.conf, is {m[1:2]}")
    for name in nodes:
        if name not in depends_on(lb):
            problem(f"{f}: {lbs[0]} does not depend on {name}")
    if not lb.get("ports"):
        problem(f"{f}: {lbs[0]} publishes no port")
    for upstream, servers in nginx_upstreams(f"{DEPLOY}/nginx/cluster.conf").items():
        hosts = {h for h, _ in servers}
        if hosts != set(nodes):
            problem(f"nginx/cluster.conf: upstream {upstream} has {sorted(hosts)}, the nodes are {sorted(nodes)}")
        for _, port in servers:
            if not any(port in found for found in ports.values()):
                problem(f"nginx/cluster.conf: upstream {upstream} port {port} is not one the nodes listen on")

def services_of_compose():
    docs = load_yaml(f"{DEPLOY}/compose.yaml")
    return (docs[0].get("services") or {}) if docs and isinstance(docs[0], dict) else {}

# --- Kubernetes --------------------------------------------------------------------------
K8S_API = {"Service": "v1", "Secret": "v1", "PersistentVolumeClaim": "v1", "StatefulSet": "apps/v1",
           "Deployment": "apps/v1", "PodDisruptionBudget": "policy/v1"}

def k8s_objects(f):
    """The objects of deploy/kubernetes/F by kind, after the checks every object gets."""
    by_kind = {}
    for i, d in enumerate(load_yaml(f"{DEPLOY}/kubernetes/{f}")):
        if not isinstance(d, dict):
            problem(f"{f} document {i}: not a mapping"); continue
        for field in ("apiVersion", "kind"):
            if not d.get(field):
                problem(f"{f} document {i}: no {field}")
        name = (d.get("metadata") or {}).get("name")
        if not name or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
            problem(f"{f} document {i} ({d.get('kind')}): bad or missing metadata.name {name!r}")
            d.setdefault("metadata", {})["name"] = f"document-{i}"
        by_kind.setdefault(d.get("kind"), []).append(d)
    for kind, version in K8S_API.items():
        for d in by_kind.get(kind, []):
            if d.get("apiVersion") != version:
                problem(f"{f}: {kind} {d['metadata']['name']}: apiVersion should be {version}")
    return by_kind

def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())

def check_workload(f, by_kind, workload, *, uid=None, claims=()):
    """Selector, Services, pod and container security, volumes and Secrets of one workload.
    Returns (where, pod spec, volumes by name, Services selecting it)."""
    spec = workload.get("spec") or {}
    where = f"{f}: {workload['kind']} {workload['metadata']['name']}"
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    match = ((spec.get("selector") or {}).get("matchLabels")) or {}
    if not selects(match, labels):
        problem(f"{where}: selector {match} does not match template labels {labels}")
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])
                if selects((s.get("spec") or {}).get("selector") or {}, labels)}
    if not services:
        problem(f"{where}: no Service selects its pods {labels}")
    pod = template.get("spec") or {}
    psc = pod.get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True:
        problem(f"{where}: pod securityContext.runAsNonRoot should be true")
    if psc.get("fsGroup") is None:
        problem(f"{where}: pod securityContext.fsGroup missing")
    if uid is not None and psc.get("runAsUser") not in (None, uid):
        problem(f"{where}: runAsUser {psc.get('runAsUser')} differs from the Dockerfile's USER {uid}")
    if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        problem(f"{where}: pod seccompProfile should be RuntimeDefault")
    if pod.get("automountServiceAccountToken") is not False:
        problem(f"{where}: automountServiceAccountToken should be false")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
    def secret_keys(name):
        s = secrets[name]
        return set((s.get("stringData") or {})) | set((s.get("data") or {}))
    for vname, v in volumes.items():
        if "secret" in v:
            sname = v["secret"].get("secretName")
            if sname not in secrets:
                problem(f"{where}: volume {vname} uses Secret {sname}, not defined in the file")
            else:
                for item in v["secret"].get("items", []):
                    if item.get("key") not in secret_keys(sname):
                        problem(f"{where}: Secret {sname} has no key {item.get('key')}")
            mode = v["secret"].get("defaultMode")
            if mode is None or mode & 0o007:
                problem(f"{where}: Secret volume {vname} defaultMode {mode!r} is not closed to others")
        if "persistentVolumeClaim" in v:
            cname = v["persistentVolumeClaim"].get("claimName")
            if cname not in {c["metadata"]["name"] for c in by_kind.get("PersistentVolumeClaim", [])}:
                problem(f"{where}: volume {vname} claims {cname}, not a PersistentVolumeClaim in the file")
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
        for e in c.get("env", []):
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref and ref.get("name") in secrets and ref.get("key") not in secret_keys(ref["name"]):
                problem(f"{cw}: env {e.get('name')}: Secret {ref['name']} has no key {ref.get('key')}")
    main = containers[0] if containers else {}
    res = main.get("resources") or {}
    if not res.get("requests") or not res.get("limits"):
        problem(f"{where} container {main.get('name')}: resources requests and limits wanted")
    if not pod.get("terminationGracePeriodSeconds"):
        problem(f"{where}: no terminationGracePeriodSeconds")
    return where, pod, volumes, services

def check_blobd_container(where, pod, main, services, data_volumes):
    """What every blobd container needs: port, probes, /data, settings, tokens file."""
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
    for name, svc in services.items():
        if 8080 not in [p.get("port") for p in (svc.get("spec") or {}).get("ports", [])]:
            problem(f"Service {name}: no port 8080")
    if pod.get("terminationGracePeriodSeconds") != 30:
        problem(f"{where}: terminationGracePeriodSeconds should be 30")
    mounts = {m.get("mountPath"): m.get("name") for m in main.get("volumeMounts", [])}
    if mounts.get("/data") not in data_volumes:
        problem(f"{cw}: /data is not on the data volume ({', '.join(sorted(data_volumes)) or 'none'})")
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
    return env

# The single node: a StatefulSet of one, its own ReadWriteOnce volume.
def check_k8s():
    f = "blobd.yaml"
    by_kind = k8s_objects(f)
    sets = by_kind.get("StatefulSet", [])
    if len(sets) != 1:
        return problem(f"{f}: want exactly one StatefulSet, have {len(sets)}")
    sts = sets[0]; spec = sts.get("spec") or {}
    claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
    where, pod, volumes, services = check_workload(f, by_kind, sts, uid=dockerfile_uid(), claims=claims)
    if spec.get("replicas") != 1:
        problem(f"{where}: replicas should be 1 (single-node service)")
    all_services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    headless = spec.get("serviceName")
    if not headless:
        problem(f"{where}: no serviceName")
    elif headless not in all_services:
        problem(f"{where}: serviceName {headless} is not a Service in the file")
    elif (all_services[headless].get("spec") or {}).get("clusterIP") != "None":
        problem(f"{where}: serviceName {headless} should be headless (clusterIP: None)")
    if set(all_services) != set(services):
        problem(f"{where}: Services {sorted(set(all_services) - set(services))} do not select its pods")
    if not claims:
        problem(f"{where}: no volumeClaimTemplates")
    containers = pod.get("containers", [])
    if containers:
        check_blobd_container(where, pod, containers[0], services, set(claims))

# The cluster: a Deployment of two or more nodes on one ReadWriteMany claim and PostgreSQL.
def check_k8s_cluster():
    f = "cluster.yaml"
    by_kind = k8s_objects(f)
    if by_kind.get("StatefulSet"):
        problem(f"{f}: the nodes are a Deployment; no StatefulSet wanted here")
    deployments = by_kind.get("Deployment", [])
    if len(deployments) != 1:
        return problem(f"{f}: want exactly one Deployment, have {len(deployments)}")
    dep = deployments[0]; spec = dep.get("spec") or {}
    where, pod, volumes, services = check_workload(f, by_kind, dep, uid=dockerfile_uid())
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or replicas < 2:
        problem(f"{where}: replicas should be 2 or more, is {replicas!r}")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for budget in by_kind.get("PodDisruptionBudget", []):
        sel = ((budget.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not selects(sel, labels):
            problem(f"{f}: PodDisruptionBudget {budget['metadata']['name']} selector {sel} misses the pods {labels}")
    claims = {c["metadata"]["name"]: c for c in by_kind.get("PersistentVolumeClaim", [])}
    shared = set()
    for vname, v in volumes.items():
        cname = (v.get("persistentVolumeClaim") or {}).get("claimName")
        if cname in claims:
            cspec = claims[cname].get("spec") or {}
            if "ReadWriteMany" not in (cspec.get("accessModes") or []):
                problem(f"{f}: PersistentVolumeClaim {cname} should be ReadWriteMany (every node mounts it)")
            if not cspec.get("storageClassName"):
                problem(f"{f}: PersistentVolumeClaim {cname} has no storageClassName (an RWX class)")
            shared.add(vname)
    containers = pod.get("containers", [])
    if not containers:
        return
    main = containers[0]
    env = check_blobd_container(where, pod, main, services, shared)
    cw = f"{where} container {main.get('name')}"
    entries = {e.get("name"): e for e in main.get("env", [])}
    field = (((entries.get("BLOBD_NODE_ID") or {}).get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
    if field != "metadata.name":
        problem(f"{cw}: BLOBD_NODE_ID should come from the pod name (fieldRef metadata.name), is {entries.get('BLOBD_NODE_ID')}")
    ref = (((entries.get("BLOBD_INDEX") or {}).get("valueFrom") or {}).get("secretKeyRef")) or {}
    if not ref:
        problem(f"{cw}: BLOBD_INDEX should come from a Secret (secretKeyRef), it holds the password")
    else:
        secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
        if ref.get("name") not in secrets:
            problem(f"{cw}: BLOBD_INDEX's Secret {ref.get('name')} is not in the file")
        else:
            value = (secrets[ref["name"]].get("stringData") or {}).get(ref.get("key"))
            if value is not None:
                check_variable(f"{f}: Secret {ref['name']} key {ref.get('key')}", "BLOBD_INDEX", value)
    for name in ("BLOBD_INDEX", "BLOBD_NODE_ID"):
        if env.get(name) is not None:
            problem(f"{cw}: {name} is a literal value")
    readiness = ((main.get("readinessProbe") or {}).get("httpGet") or {}).get("path")
    for probe in ("livenessProbe", "startupProbe"):
        if ((main.get(probe) or {}).get("httpGet") or {}).get("path") == "/readyz":
            problem(f"{cw}: {probe} on /readyz would restart every pod while PostgreSQL is away")
    if readiness != "/readyz":
        problem(f"{cw}: readinessProbe should be /readyz")

# A throwaway PostgreSQL for trying the cluster out.
def check_k8s_postgres():
    f = "postgres-trial.yaml"
    by_kind = k8s_objects(f)
    sets = by_kind.get("StatefulSet", [])
    if len(sets) != 1:
        return problem(f"{f}: want exactly one StatefulSet, have {len(sets)}")
    sts = sets[0]; spec = sts.get("spec") or {}
    claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
    where, pod, volumes, services = check_workload(f, by_kind, sts, claims=claims)
    if spec.get("replicas") != 1:
        problem(f"{where}: replicas should be 1")
    containers = pod.get("containers", [])
    if not containers:
        return
    main = containers[0]
    cw = f"{where} container {main.get('name')}"
    if main.get("image") != "postgres:15":
        problem(f"{cw}: image should be postgres:15, is {main.get('image')}")
    entries = {e.get("name"): e for e in main.get("env", [])}
    for key in ("POSTGRES_USER", "POSTGRES_DB"):
        if (entries.get(key) or {}).get("value") != "blobd":
            problem(f"{cw}: {key} should be blobd")
    if not ((entries.get("POSTGRES_PASSWORD") or {}).get("valueFrom") or {}).get("secretKeyRef"):
        problem(f"{cw}: POSTGRES_PASSWORD should come from a Secret")
    mounts = {m.get("mountPath"): m.get("name") for m in main.get("volumeMounts", [])}
    pgdata = (entries.get("PGDATA") or {}).get("value", "/var/lib/postgresql/data")
    if not any(pgdata.startswith(p.rstrip("/") + "/") and n in claims for p, n in mounts.items()):
        problem(f"{cw}: PGDATA {pgdata} should be a directory below the volume claim's mount")
    for probe in ("readinessProbe", "livenessProbe"):
        command = " ".join(((main.get(probe) or {}).get("exec") or {}).get("command") or [])
        if "pg_isready" not in command:
            problem(f"{cw}: {probe} should run pg_isready")
    for name, svc in services.items():
        if 5432 not in [p.get("port") for p in (svc.get("spec") or {}).get("ports", [])]:
            problem(f"{f}: Service {name}: no port 5432")

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
    has(r"^EXPOSE\s+(\S+\s+)*8080(\s|$)", "EXPOSE 8080")
    has(r"^EXPOSE\s+(\S+\s+)*9000(\s|$)", "EXPOSE 9000 (S3)")
    has(r"^VOLUME\s+(\[\s*\"/data\"\s*\]|/data)\s*$", "VOLUME /data")
    has(r"^STOPSIGNAL\s+SIGTERM\s*$", "STOPSIGNAL SIGTERM")
    has(r"^ENV\s.*\bBLOBD_DATA_DIR=/data\b", "ENV BLOBD_DATA_DIR=/data")
    has(r"^ENV\s.*\bBLOBD_LISTEN=0\.0\.0\.0:8080\b", "ENV BLOBD_LISTEN=0.0.0.0:8080")
    has(r"^ENV\s.*\bBLOBD_S3_LISTEN=0\.0\.0\.0:9000\b", "ENV BLOBD_S3_LISTEN=0.0.0.0:9000")
    for package in ("libmicrohttpd12", "libsqlite3-0", "libssl3", "libpq5", "curl", "ca-certificates"):
        has(rf"apt-get install .*\b{re.escape(package)}\b", f"package {package}")
    build = instructions[:instructions.index(froms[-1])] if froms else []
    for package in ("libmicrohttpd-dev", "libsqlite3-dev", "libssl-dev", "libpq-dev", "pkg-config"):
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

# nginx's syntax, enough for these files: [(directive, [args], children or None)].
def nginx_parse(path):
    text = re.sub(r"#[^\n]*", "", open(path).read())
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[{};]|[^\s{};]+', text)
    def block(i):
        out, words = [], []
        while i < len(tokens):
            t = tokens[i]; i += 1
            if t == ";":
                out.append((words[0], words[1:], None)); words = []
            elif t == "{":
                children, i = block(i)
                out.append((words[0], words[1:], children)); words = []
            elif t == "}":
                return out, i
            else:
                words.append(t)
        return out, i
    return block(0)[0]

def nginx_find(tree, name):
    """Every `name` directive in tree, at any depth."""
    for directive, args, children in tree:
        if directive == name:
            yield args, children
        if children:
            yield from nginx_find(children, name)

def nginx_upstreams(path):
    """{upstream: [(host, port)]} of an nginx file."""
    out = {}
    for args, children in nginx_find(nginx_parse(path), "upstream"):
        servers = []
        for sargs, _ in nginx_find(children or [], "server"):
            host, _, port = sargs[0].rpartition(":")
            servers.append((host, port))
        out[args[0]] = servers
    return out

def check_nginx_cluster():
    f = "nginx/cluster.conf"
    tree = nginx_parse(f"{DEPLOY}/{f}")
    top = [(d, a) for d, a, c in tree if c is None]
    upstreams = {args[0]: children for args, children in nginx_find(tree, "upstream")}
    if "blobd_nodes" not in upstreams:
        problem(f"{f}: no upstream blobd_nodes")
    for name, children in upstreams.items():
        servers = [a[0] for a, _ in nginx_find(children, "server")]
        if len(set(servers)) < 2:
            problem(f"{f}: upstream {name} should have two or more distinct servers, has {servers}")
        if not list(nginx_find(children, "keepalive")):
            problem(f"{f}: upstream {name} has no keepalive")
    servers = [children for args, children in nginx_find(tree, "server") if children is not None]
    if not servers:
        problem(f"{f}: no server block")
    for server in servers:
        listen = " ".join(" ".join(a) for a, _ in nginx_find(server, "listen"))
        def have(directive, *values):
            found = [a for a, _ in nginx_find(server, directive)] + [a for d, a in top if d == directive]
            return found and all(list(a[:len(values)]) == list(values) for a in found)
        for directive, values in (("client_max_body_size", ("0",)), ("proxy_request_buffering", ("off",)),
                                  ("proxy_buffering", ("off",)), ("proxy_http_version", ("1.1",))):
            if not have(directive, *values):
                problem(f"{f}: server on {listen}: want `{directive} {' '.join(values)}` everywhere it is set")
        connection = [a for a, _ in nginx_find(server, "proxy_set_header") if a[0].lower() == "connection"]
        if not connection or any(a[1:] != ['""'] for a in connection):
            problem(f"{f}: server on {listen}: no `proxy_set_header Connection \"\"` (upstream keep-alive)")
        passes = [a[0] for a, _ in nginx_find(server, "proxy_pass")]
        for target in passes:
            m = re.fullmatch(r"http://([^/]+)", target)
            if not m or m.group(1) not in upstreams:
                problem(f"{f}: server on {listen}: proxy_pass {target} is not an upstream of the file, or has a URI")
        if not passes:
            problem(f"{f}: server on {listen}: no proxy_pass")
        nexts = [a for a, _ in nginx_find(server, "proxy_next_upstream")] + [a for d, a in top if d == "proxy_next_upstream"]
        if not nexts:
            problem(f"{f}: server on {listen}: no proxy_next_upstream")
        for a in nexts:
            if "error" not in a or "timeout" not in a:
                problem(f"{f}: server on {listen}: proxy_next_upstream {' '.join(a)}: want error and timeout")
            if "non_idempotent" in a:
                problem(f"{f}: server on {listen}: proxy_next_upstream must not retry non-idempotent requests (POST, PATCH, LOCK)")
            if any(x.startswith("http_") for x in a):
                problem(f"{f}: server on {listen}: proxy_next_upstream {' '.join(a)}: a node's HTTP status is its answer, not a failure to retry")

# --- README ------------------------------------------------------------------------------
def check_readme():
    text = open(f"{DEPLOY}/README.md").read()
    for name in ("blobd.service", "blobd.env", "Dockerfile", "compose.yaml", "kubernetes/blobd.yaml",
                 "nginx/blobd.conf", "nginx/blobd-s3.conf", "check.sh", "-f deploy/Dockerfile", "fsck",
                 "compose-cluster.yaml", "kubernetes/cluster.yaml", "kubernetes/postgres-trial.yaml",
                 "nginx/cluster.conf", "## Scale out", "migrate-index", "pg_dump", "--reclaim-grace",
                 "blobd --index postgres://blobd@db/blobd --data-dir /mnt/cephfs/blobd --node-id a --listen 0.0.0.0:8080",
                 "blobd --index postgres://blobd@db/blobd --data-dir /mnt/cephfs/blobd --node-id b --listen 0.0.0.0:8080"):
        if name not in text:
            problem(f"README.md does not mention {name}")
    # Every file of deploy/ is in the table at the top.
    table = text.split("\n## ", 1)[0]
    for path in sorted(glob.glob(f"{DEPLOY}/**/*", recursive=True)):
        rel = os.path.relpath(path, DEPLOY)
        if os.path.isfile(path) and rel != "README.md" and f"]({rel})" not in table:
            problem(f"README.md: {rel} is not in the table of files")

try:
    {"unit": check_unit, "env": check_env, "compose": check_compose, "compose-cluster": check_compose_cluster,
     "k8s": check_k8s, "k8s-cluster": check_k8s_cluster, "k8s-postgres": check_k8s_postgres,
     "dockerfile": check_dockerfile, "nginx": check_nginx, "nginx-cluster": check_nginx_cluster,
     "readme": check_readme}[sys.argv[1]]()
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
pycheck compose-cluster compose-cluster \
    "deploy/compose-cluster.yaml parses; postgres, distinct node ids, one shared volume, nginx upstreams"
if docker compose version >/dev/null 2>&1; then
    for file in compose.yaml compose-cluster.yaml; do
        # The cluster's database password comes from the environment; any value will do here.
        if out=$(BLOBD_DB_PASSWORD=check docker compose -f "$DEPLOY/$file" config -q 2>&1); then
            pass compose-config "docker compose config ($file)"
        else
            fail compose-config "docker compose config ($file)"
            printf '%s\n' "$out" | details
        fi
    done
elif command -v check-jsonschema >/dev/null 2>&1; then
    # The Compose Specification's JSON schema, which check-jsonschema ships (no network).
    for file in compose.yaml compose-cluster.yaml; do
        if out=$(check-jsonschema --builtin-schema vendor.compose-spec "$DEPLOY/$file" 2>&1); then
            pass compose-config "check-jsonschema against the Compose Specification ($file)"
        else
            fail compose-config "check-jsonschema against the Compose Specification ($file)"
            printf '%s\n' "$out" | details
        fi
    done
else
    skip compose-config "neither docker compose nor check-jsonschema installed (structure checked above)"
fi

# --- Kubernetes --------------------------------------------------------------------------
pycheck k8s-objects k8s "deploy/kubernetes/blobd.yaml parses; objects, probes, security"
pycheck k8s-cluster k8s-cluster "deploy/kubernetes/cluster.yaml: Deployment >= 2, RWX claim, node id, index Secret"
pycheck k8s-postgres k8s-postgres "deploy/kubernetes/postgres-trial.yaml: postgres:15, probes, security"
if command -v kubeconform >/dev/null 2>&1; then
    # Downloads JSON schemas unless KUBECONFORM_FLAGS points at local ones
    # (e.g. KUBECONFORM_FLAGS="-schema-location /path/{{.ResourceKind}}.json").
    # shellcheck disable=SC2086
    if out=$(kubeconform -strict -summary ${KUBECONFORM_FLAGS:-} "$DEPLOY"/kubernetes/*.yaml 2>&1); then
        pass kubeconform "$(printf '%s\n' "$out" | tail -n 1)"
    else
        fail kubeconform
        printf '%s\n' "$out" | details
    fi
elif command -v kubernetes-validate >/dev/null 2>&1; then
    # Its schemas come with it (pip install kubernetes-validate): nothing is downloaded.
    if out=$(kubernetes-validate --strict --quiet "$DEPLOY"/kubernetes/*.yaml 2>&1); then
        pass kubeconform "kubernetes-validate --strict ($(kubernetes-validate --version 2>&1))"
    else
        fail kubeconform "kubernetes-validate --strict"
        printf '%s\n' "$out" | details
    fi
else
    skip kubeconform "neither kubeconform nor kubernetes-validate on PATH (structure checked by k8s-objects)"
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
pycheck nginx-cluster nginx-cluster "deploy/nginx/cluster.conf streams; retries only what may be retried"

# nginx -t on the server blocks, wrapped in a minimal nginx.conf in the temp dir.
# nginx -t opens the listening sockets it checks (binds, then exits), so that it touches no
# network port (nor clashes with a running web server) the test copy listens on Unix sockets
# in the temp dir instead of :80 and :443; the certificate is a throw-away self-signed one.
# Upstream servers named by host name (compose service names, unknown here) become
# 127.0.0.1 with the same port: nginx -t resolves them and would fail, not on the file.
nginx_test() {
    local file=$1 n="$TMP/nginx-${1%.conf}" out warnings
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
        -e "s#^\([[:space:]]*server[[:space:]]\{1,\}\)[A-Za-z][-A-Za-z0-9.]*:\([0-9]\{1,\}\)#\1127.0.0.1:\2#" \
        "$DEPLOY/nginx/$file" >"$n/site.conf"
    if grep -Eq '^[[:space:]]*listen[[:space:]]+[^u[:space:]]' "$n/site.conf"; then
        fail nginx-t "$file: a listen line could not be moved to a Unix socket; nginx -t not run"
        grep -E '^[[:space:]]*listen' "$n/site.conf" | details
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
    include $n/site.conf;
}
EOF
    if out=$(nginx -t -p "$n/" -e "$n/logs/startup.log" -c "$n/nginx.conf" 2>&1); then
        warnings=$(printf '%s\n' "$out" | grep -F '[warn]' || true)
        pass nginx-t "nginx -t on $file ($(nginx -v 2>&1 | sed 's/.*: //'), listening on Unix sockets)"
        if [ -n "$warnings" ]; then printf '%s\n' "$warnings" | details; fi
    else
        fail nginx-t "nginx -t on $file"
        printf '%s\n' "$out" | details
    fi
}
if command -v nginx >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1; then
    for conf in "$DEPLOY"/nginx/*.conf; do
        nginx_test "$(basename "$conf")"
    done
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
