#!/usr/bin/env bash
# A throwaway single-node Ceph cluster on 127.0.0.1 for tests and benchmarks (Debian 12 packages).
#
#   tools/ceph-local.sh start DIR [--fuse MOUNT]... [--rgw]
#   tools/ceph-local.sh stop DIR
#
# start: one mon, one BlueStore OSD on a sparse 8 GiB file (DIR/osd0.block), one MDS and a CephFS
#   "cephfs" (pools of size 1), a ceph-fuse mount of the CephFS root at each MOUNT, and with --rgw
#   a radosgw (beast) on a free port with an S3 user "bench". No auth, msgr2 in crc mode, every
#   daemon on 127.0.0.1 only, every file (conf, data, logs, sockets) under DIR. Prints
#   shell-sourceable NAME='value' lines on stdout (not exported: `set -a; eval "$(... start ...)";
#   set +a`; CEPH_MOUNTS is space-separated), progress on stderr. Every daemon PID goes to
#   DIR/pids, every mount to DIR/mounts; if start fails midway it tears down what it started.
#   CEPH_LOCAL_WAIT (default 90) bounds each wait, in seconds.
# stop: unmounts what DIR/mounts lists, then TERMs (and after 3 s KILLs) the PIDs in DIR/pids that
#   are still this cluster's daemons. Never kills by name. Idempotent. The caller removes DIR.
set -euo pipefail

PACKAGES="ceph-mon ceph-osd ceph-mds radosgw ceph-fuse ceph-common"
WAIT=${CEPH_LOCAL_WAIT:-90}   # seconds allowed for each thing to come up
STOP_GRACE=3                  # seconds between TERM and KILL on stop, per wave (see do_stop)

log() { echo "ceph-local: $*" >&2; }
usage() { echo "usage: $0 start DIR [--fuse MOUNT]... [--rgw] | $0 stop DIR" >&2; exit 2; }

# ---------------------------------------------------------------- stop
# A PID from DIR/pids is ours only while its command line still names DIR/ceph.conf
# (guards against PIDs reused since); a zombie counts as gone.
is_ours() {
  local state
  [[ $1 =~ ^[0-9]+$ ]] || return 1
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $state != Z ]] || return 1
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$CONF"
}

do_stop() {
  local m pid first=() osd=() mon=() rc=0
  # Unmount first, newest first: fusermount -u, and umount -l if busy or the daemon is gone;
  # again while the mount point still has one (a mount stacked on another: at most 3).
  if [[ -f $D/mounts ]]; then
    while IFS= read -r m; do
      for _ in 1 2 3; do
        [[ -n $m ]] && findmnt -rn --mountpoint "$m" >/dev/null 2>&1 || break
        timeout 10 fusermount -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || { log "could not unmount $m"; break; }
      done
    done < <(tac "$D/mounts")
  fi
  # TERM in three waves, each waited for up to STOP_GRACE s, then KILLed: clients, radosgw and
  # the MDS; then the OSD; then the mon, so that each finds what it talks to on the way out still
  # up (else the OSD waits 5 s for the mon's ack). The MDS says goodbye to the mon within ~1 s and
  # then often idles ~5 s on the OSD that blocklisted it: not worth waiting for here.
  if [[ -f $D/pids ]]; then
    while IFS= read -r pid; do
      is_ours "$pid" || continue
      case $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) in
        ceph-mon*) mon+=("$pid") ;; ceph-osd*) osd+=("$pid") ;; *) first+=("$pid") ;;
      esac
    done <"$D/pids"
  fi
  term_and_wait "${first[@]+"${first[@]}"}" || rc=1
  term_and_wait "${osd[@]+"${osd[@]}"}" || rc=1
  term_and_wait "${mon[@]+"${mon[@]}"}" || rc=1
  return $rc
}

term_and_wait() {  # term_and_wait PID...: TERM, wait up to STOP_GRACE s, KILL, wait up to 5 s
  local ticks=$((STOP_GRACE * 10)) pid killed=0 left=("$@") still
  ((${#left[@]})) || return 0
  kill -TERM "${left[@]}" 2>/dev/null || true
  while :; do
    still=()
    for pid in "${left[@]}"; do is_ours "$pid" && still+=("$pid"); done
    ((${#still[@]})) || return 0
    left=("${still[@]}")
    if ((ticks-- <= 0)); then
      ((killed)) && { log "still not gone after KILL: ${left[*]}"; return 1; }
      log "KILL after ${STOP_GRACE}s: $(for pid in "${left[@]}"; do
        echo -n "$pid ($(cat "/proc/$pid/comm" 2>/dev/null)) "; done)"
      kill -KILL "${left[@]}" 2>/dev/null || true
      killed=1; ticks=50
    fi
    sleep 0.1
  done
}

# ---------------------------------------------------------------- start helpers
declare -A NAME_OF=()   # pid -> daemon name, to show its log on failure

fail() {  # fail NAME MESSAGE: say what went wrong with the tail of NAME's logs, and exit
  local f
  log "ERROR: $2"
  for f in "$D/log/$1.log" "$D/log/$1.out"; do
    [[ -s $f ]] && { echo "---- tail of $f" >&2; tail -n 25 "$f" >&2; }
  done
  exit 1
}

spawn() {  # spawn NAME CMD...: run a daemon (in its foreground) as a background job, record its PID
  local name=$1 pid state i; shift
  "$@" </dev/null >>"$D/log/$name.out" 2>&1 &
  pid=$!
  echo $pid >>"$D/pids"; NAME_OF[$pid]=$name; disown $pid   # (no "Killed" job notices)
  # Until the job execs the daemon its command line is this script's, which is_ours takes for a
  # daemon gone (a busy machine can take a while): wait up to 5 s for the exec, or for its end.
  for ((i = 0; i < 100; i++)); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$CONF" && return 0
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) && [[ $state != Z ]] || return 0
    sleep 0.05
  done
}

wait_until() {  # wait_until NAME WHAT CMD...: poll CMD for up to WAIT s; fail early if a daemon died
  local name=$1 what=$2 end=$((SECONDS + WAIT)) pid; shift 2
  until "$@" >/dev/null 2>&1; do
    for pid in "${!NAME_OF[@]}"; do
      is_ours "$pid" || fail "${NAME_OF[$pid]}" "${NAME_OF[$pid]} (pid $pid) exited while waiting for $what"
    done
    ((SECONDS < end)) || fail "$name" "timed out after ${WAIT}s waiting for $what"
    sleep 0.5
  done
  log "$what: ok (${SECONDS}s)"
}

mount_fuse() {  # mount_fuse NAME MOUNT: ceph-fuse at MOUNT, started again (3 tries in all) if it
  # exits before the mount appears: a client may find the MDS it just saw active not yet taking
  # sessions. Any other daemon that dies, or a mount that takes WAIT s, fails at once.
  local name=$1 m=$2 try pid other end
  for try in 1 2 3; do
    spawn "$name" ceph-fuse -f -c "$CONF" -n "$name" "$m"
    pid=$! end=$((SECONDS + WAIT))
    until findmnt -rn --mountpoint "$m" >/dev/null 2>&1; do
      for other in "${!NAME_OF[@]}"; do
        [[ $other == "$pid" ]] || is_ours "$other" || fail "${NAME_OF[$other]}" "${NAME_OF[$other]} (pid $other) exited while waiting for ceph-fuse mount $m"
      done
      is_ours "$pid" || break
      ((SECONDS < end)) || fail "$name" "timed out after ${WAIT}s waiting for ceph-fuse mount $m"
      sleep 0.5
    done
    if findmnt -rn --mountpoint "$m" >/dev/null 2>&1; then
      is_ours "$pid" || fail "$name" "$name (pid $pid) exited after mounting $m"
      log "ceph-fuse mount $m: ok (${SECONDS}s, try $try)"
      return 0
    fi
    log "$name (pid $pid) exited before mounting $m (try $try of 3)"
    unset "NAME_OF[$pid]"
    sleep 1
  done
  fail "$name" "$name exited 3 times before mounting $m"
}

c() { timeout 30 ceph -c "$CONF" --connect-timeout 20 "$@"; }   # a bounded ceph CLI call
q() { timeout 8 ceph -c "$CONF" --connect-timeout 5 "$@"; }     # a quick probe
osd_up() { q osd stat | grep -q ' 1 up'; }
mds_active() { q mds stat | grep -q 'up:active'; }

ensure_packages() {
  local p missing="" sudo=""
  for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [[ -n $missing ]] || return 0
  [[ $(id -u) == 0 ]] || sudo=sudo
  log "installing:$missing"
  { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends $missing; } >&2
}

# ---------------------------------------------------------------- start
do_start() {
  local fuse=() rgw=0 m i=0 mon_port rgw_port fsid osd_uuid ak sk
  while (($#)); do
    case $1 in
      --fuse) (($# >= 2)) || usage; fuse+=("$(realpath -m "$2")"); shift 2 ;;
      --rgw) rgw=1; shift ;;
      *) usage ;;
    esac
  done
  ensure_packages
  if [[ -f $D/pids ]]; then
    while read -r m; do is_ours "$m" && { log "ERROR: a cluster already runs in $D"; exit 1; }; done <"$D/pids"
  fi
  rm -f "$D/pids" "$D/mounts"; touch "$D/pids" "$D/mounts"
  # From here on, any failure (set -e, fail, a signal) tears down whatever was started.
  trap 'rc=$?; if ((rc)); then log "start failed; tearing down"; do_stop || true; fi; exit $rc' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$D"/{log,run,crash,mon.a,osd.0,mds.a,rgw.a}

  read -r mon_port rgw_port < <(/usr/bin/python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
  fsid=$(uuidgen)
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
# With auth none, msgr2 cannot negotiate "secure": ask for crc on every link.
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
# Nothing outside DIR: no /var/log/ceph, /var/run/ceph, /var/lib/ceph.
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
mon cluster log file = $D/log/cluster.log
crash dir = $D/crash
keyring = $D/keyring
# One OSD: size-1 pools with few PGs.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
# HEALTH_OK despite size 1, auth none, no ceph-mgr (not needed here) and a fullish host disk.
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
mon mgr mkfs grace = 315360000
mon data avail warn = 1
[mon]
mon data = $D/mon.\$id
# Commit map changes every 0.1 s, not 1 s: pools, OSD boot, MDS and radosgw all come up sooner.
paxos propose interval = 0.1
[osd]
osd data = $D/osd.\$id
osd objectstore = bluestore
# The block file must live outside the OSD data dir (mkfs puts a "block" symlink there: ELOOP).
bluestore block path = $D/osd\$id.block
bluestore block size = 8589934592
osd memory target = 1073741824
[mds]
mds data = $D/mds.\$id
# Beacons every second (not 4): the MDS goes active and, on TERM, leaves sooner.
mds beacon interval = 1
[client]
admin socket = $D/run/\$name.\$pid.asok
[client.rgw.a]
rgw data = $D/rgw.a
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
# On TERM radosgw sometimes hangs in shutdown; its own alarm then ends it after this many seconds.
rgw exit timeout secs = 2
EOF

  log "mon.a on 127.0.0.1:$mon_port"
  { ceph-authtool "$D/keyring" --create-keyring --gen-key -n mon. --cap mon 'allow *' \
    && monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$D/monmap"; } \
    >>"$D/log/cli.out" 2>&1 || fail cli "keyring or monmap creation failed"
  ceph-mon -c "$CONF" -i a --mkfs --monmap "$D/monmap" >"$D/log/mon.a.out" 2>&1 || fail mon.a "mon mkfs failed"
  spawn mon.a ceph-mon -f -c "$CONF" -i a
  wait_until mon.a "mon quorum" q mon stat

  osd_uuid=$(uuidgen)
  [[ $(c osd new "$osd_uuid" 2>>"$D/log/cli.out") == 0 ]] || fail cli "ceph osd new did not give id 0"
  truncate -s 8G "$D/osd0.block"
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" >"$D/log/osd.0.out" 2>&1 || fail osd.0 "osd mkfs failed"
  spawn osd.0 ceph-osd -f -c "$CONF" -i 0
  # While the OSD boots: the CephFS pools and file system, the MDS, radosgw (makes its own pools).
  { c osd pool create cephfs_metadata 8 8 && c osd pool create cephfs_data 8 8 \
      && c fs new cephfs cephfs_metadata cephfs_data; } >>"$D/log/cli.out" 2>&1 || fail cli "CephFS creation failed"
  spawn mds.a ceph-mds -f -c "$CONF" -i a
  if ((rgw)); then spawn client.rgw.a radosgw -f -c "$CONF" -n client.rgw.a; fi
  wait_until osd.0 "osd.0 up" osd_up
  wait_until mds.a "mds active" mds_active

  for m in "${fuse[@]+"${fuse[@]}"}"; do
    mkdir -p "$m"
    echo "$m" >>"$D/mounts"
    mount_fuse client.fuse$i "$m"
    i=$((i + 1))
  done

  if ((rgw)); then
    wait_until client.rgw.a "radosgw on 127.0.0.1:$rgw_port" curl -fsS -o /dev/null "http://127.0.0.1:$rgw_port/"
    ak=$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
    sk=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
    timeout 60 radosgw-admin -c "$CONF" user create --uid=bench --display-name=bench \
      --access-key="$ak" --secret="$sk" >>"$D/log/cli.out" 2>&1 || fail cli "radosgw-admin user create failed"
  fi

  log "up in ${SECONDS}s"
  kv CEPH_CONF "$CONF"
  kv CEPH_MOUNTS "${fuse[*]+"${fuse[*]}"}"
  if ((rgw)); then
    kv RGW_ENDPOINT "http://127.0.0.1:$rgw_port"; kv RGW_ACCESS_KEY "$ak"; kv RGW_SECRET_KEY "$sk"
  fi
}

kv() { local q="'\\''"; printf "%s='%s'\n" "$1" "${2//\'/$q}"; }   # NAME='VALUE', for sh and parsers

# ---------------------------------------------------------------- main
(($# >= 2)) || usage
cmd=$1; D=$(realpath -m "$2"); CONF=$D/ceph.conf; shift 2
case $cmd in
  start) mkdir -p "$D"; do_start "$@" ;;
  stop) (($# == 0)) || usage; do_stop; log "stopped in ${SECONDS}s" ;;
  *) usage ;;
esac
