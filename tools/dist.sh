#!/usr/bin/env bash
# tools/dist.sh — packages the release build for machines without Swift (`make dist` builds it
# first with `swift build -c release --static-swift-stdlib`):
#   dist/blobd-VERSION-linux-ARCH.tar.gz   blobd, README.md, openapi.yaml, deploy/
#   dist/blobd_VERSION_ARCH.deb            /usr/bin/blobd, the systemd unit, /etc/blobd/blobd.env
# The Swift runtime is inside the binary; what it still links (libmicrohttpd, SQLite, OpenSSL,
# libpq, zlib, libc) becomes the .deb's Depends, found with ldd and dpkg -S.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=.build/release/blobd
[ -x "$binary" ] || { echo "tools/dist.sh: no $binary; run make dist" >&2; exit 1; }
version=$(sed -n 's/^let blobdVersion = "\(.*\)"$/\1/p' Sources/blobd/Version.swift)
[ -n "$version" ] || { echo "tools/dist.sh: no version in Sources/blobd/Version.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
if ldd "$binary" | grep -q 'libswiftCore'; then
    echo "tools/dist.sh: $binary links the Swift runtime dynamically; build with --static-swift-stdlib" >&2
    exit 1
fi

rm -rf dist/stage && mkdir -p dist/stage

# --- tarball -----------------------------------------------------------------------------
name=blobd-$version-linux-$(uname -m)
mkdir -p "dist/stage/$name/deploy"
install -m 0755 "$binary" "dist/stage/$name/blobd"
strip --strip-debug "dist/stage/$name/blobd"   # symbols stay, for backtraces
install -m 0644 README.md openapi.yaml "dist/stage/$name/"
cp -R deploy/. "dist/stage/$name/deploy/"
tar -C dist/stage --owner=0 --group=0 -czf "dist/$name.tar.gz" "$name"

# --- .deb --------------------------------------------------------------------------------
# The packages that own each library the binary names (DT_NEEDED, where ldd finds it;
# usrmerge: try /usr too). Their own dependencies come with them.
depends=""
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $(for name in $needed; do ldd "$binary" | awk -v n="$name" '$1 == n && $3 ~ /^\// { print $3 } $1 ~ "/" n "$" { print $1 }'; done | sort -u); do
    owner=""
    for path in "$lib" "$(readlink -f "$lib")" "/usr$lib"; do
        owner=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$owner" ] && break
    done
    [ -n "$owner" ] || { echo "tools/dist.sh: no package owns $lib" >&2; exit 1; }
    case " $depends " in *" $owner "*) ;; *) depends="$depends $owner" ;; esac
done
depends=$(echo "$depends adduser" | tr ' ' '\n' | sed '/^$/d' | sort -u | paste -sd, | sed 's/,/, /g')

root=dist/stage/deb
install -D -m 0755 "$binary" "$root/usr/bin/blobd"
strip --strip-debug "$root/usr/bin/blobd"
install -d -m 0755 "$root/lib/systemd/system" "$root/etc/blobd" "$root/usr/share/doc/blobd"
sed 's#/usr/local/bin/blobd#/usr/bin/blobd#g' deploy/blobd.service >"$root/lib/systemd/system/blobd.service"
chmod 0644 "$root/lib/systemd/system/blobd.service"
install -m 0640 deploy/blobd.env "$root/etc/blobd/blobd.env"
install -m 0644 README.md "$root/usr/share/doc/blobd/README.md"
install -m 0644 deploy/README.md "$root/usr/share/doc/blobd/deploy.md"
install -d -m 0755 "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: blobd
Version: $version
Architecture: $arch
Maintainer: blobd <blobd@localhost>
Section: net
Priority: optional
Depends: $depends
Installed-Size: $(du -sk "$root" | cut -f1)
Description: HTTP blob service with a /v1 API, tus uploads and an S3 dialect
 Stores blobs of any size on the local file system with a SQLite (one node) or
 PostgreSQL (several nodes) index. Settings in /etc/blobd/blobd.env; the unit is
 installed but neither enabled nor started: edit the settings, then
 systemctl enable --now blobd.
EOF
echo /etc/blobd/blobd.env >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    getent passwd blobd >/dev/null || adduser --system --group --home /var/lib/blobd --no-create-home blobd
    chgrp blobd /etc/blobd /etc/blobd/blobd.env
    chmod 0750 /etc/blobd
    chmod 0640 /etc/blobd/blobd.env
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then systemctl stop blobd.service || true; fi
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm"
dpkg-deb --root-owner-group --build "$root" "dist/blobd_${version}_${arch}.deb" >/dev/null
rm -rf dist/stage
ls -l "dist/$name.tar.gz" "dist/blobd_${version}_${arch}.deb"
