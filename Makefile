# blobd: `make run` serves ./data on 127.0.0.1:8080, `make test` runs every test, `make dist`
# builds a static tarball and a .deb in dist/. Each installs what is missing on Debian first
# (apt-get, via sudo when not root): `make run` and `make dist` only what building needs,
# `make test` also the servers and clients the tests drive.

# `make run LISTEN=... DATA_DIR=...` passes those flags; left unset, blobd reads BLOBD_LISTEN,
# BLOBD_DATA_DIR and its other BLOBD_* variables, then its defaults (127.0.0.1:8080, ./data).
LISTEN   ?=
DATA_DIR ?=
# The S3 dialect listens on 127.0.0.1:9000 unless BLOBD_S3_LISTEN says otherwise.
S3_LISTEN ?= $(if $(BLOBD_S3_LISTEN),,127.0.0.1:9000)
# What building and running blobd need (the -dev packages bring the run-time libraries).
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev libssl-dev zlib1g-dev libpq-dev pkg-config
# What the tests and benchmarks drive besides: clients, PostgreSQL 15, nginx, a Ceph cluster,
# a headless browser (the web page and CORS tests), ffmpeg (the page test's video) and faketime
# (expiry days ahead).
TEST_APT_PACKAGES := curl python3-pip python3-yaml restic rclone postgresql nginx openssl \
	ceph-mon ceph-osd ceph-mds ceph-fuse ceph-common chromium chromium-driver ffmpeg faketime
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Installs whichever of the packages $(1) are missing, without starting their services (a
# policy-rc.d that says no, for the install only): tests and benchmarks start nginx and
# the others themselves, on 127.0.0.1, and stop them by PID.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; guard=""; \
		if [ ! -e /usr/sbin/policy-rc.d ]; then \
			printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee /usr/sbin/policy-rc.d >/dev/null && $(SUDO) chmod 755 /usr/sbin/policy-rc.d && guard=1; \
		fi; \
		$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; status=$$?; \
		[ -z "$$guard" ] || $(SUDO) rm -f /usr/sbin/policy-rc.d; \
		exit $$status; \
	fi
endef

.PHONY: deps test-deps python-deps run build release dist test check-openapi check-deploy bench bench-grants bench-events bench-versions bench-s3 bench-cluster bench-logs bench-deps clean

deps:
	$(call apt_install,$(APT_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_APT_PACKAGES))

# The Swift runtime linked statically: a smaller resident set, no Swift libraries needed at run time.
release: deps
	swift build -c release --static-swift-stdlib --product blobd

run: release
	.build/release/blobd $(if $(DATA_DIR),--data-dir $(DATA_DIR)) $(if $(LISTEN),--listen $(LISTEN)) $(if $(S3_LISTEN),--s3-listen $(S3_LISTEN))

build: deps
	swift build

# dist/blobd-VERSION-linux-ARCH.tar.gz (the static binary, the deploy/ files, README) and
# dist/blobd_VERSION_ARCH.deb (with the systemd unit), for machines without Swift.
dist: deps
	swift build -c release --static-swift-stdlib --product blobd
	tools/dist.sh

python-deps: test-deps
	@python3 -c "import openapi_spec_validator, tusclient, yaml, schemathesis, boto3, awscrt, selenium, standardwebhooks, requests" 2>/dev/null || \
		python3 -m pip install -q openapi-spec-validator tuspy pyyaml schemathesis boto3 awscrt selenium standardwebhooks requests
	@command -v aws >/dev/null 2>&1 || python3 -m pip install -q awscli
	@command -v s3cmd >/dev/null 2>&1 || python3 -m pip install -q s3cmd

check-openapi: python-deps
	python3 -c "from openapi_spec_validator import validate; from openapi_spec_validator.readers import read_from_filename; d,_=read_from_filename('openapi.yaml'); validate(d); print('openapi.yaml is valid OpenAPI 3.1')"

check-deploy: build test-deps
	deploy/check.sh

test: build test-deps python-deps check-openapi check-deploy
	swift test --no-parallel

clean:
	rm -rf .build dist

# blobd vs nginx vs lighttpd on this machine (~5 minutes), then the grants benchmark
# (bench-grants, ~2 minutes), the events benchmark (bench-events, ~2 minutes), the S3 benchmark
# (bench-s3, ~4 minutes) and the cluster benchmark
# (bench-cluster, ~4 minutes); never part of `make test`.
BENCH_PACKAGES := nginx lighttpd lighttpd-mod-webdav wrk

bench: release bench-deps python-deps
	bench/run
	python3 bench/grants.py
	python3 bench/events.py
	python3 bench/s3bench.py
	python3 bench/cluster.py

# Only the grants benchmark: small GETs and PUTs with 1,000 keys of 10 grants each against open
# access; table in bench/results/grants.md (< 3 minutes).
bench-grants: release bench-deps
	python3 bench/grants.py

# Small GETs and PUTs in a versioned bucket against an unversioned one (~2 minutes); table in
# bench/results/versions.md.
bench-versions: release bench-deps
	python3 bench/versions.py

# Only the events benchmark: small PUTs into a bucket with one subscription vs one without, in one
# blobd (~4 minutes); table in bench/results/events.md.
bench-events: release bench-deps
	python3 bench/events.py

# Only the S3 benchmark: blobd's S3 dialect against its /v1 API and against Ceph RGW, on a
# throwaway one-node cluster (tools/ceph-local.sh); table in bench/results/s3.md (< 5 minutes).
bench-s3: release bench-deps python-deps
	python3 bench/s3bench.py

# Only the cluster benchmark: one node on SQLite, one and two nodes on a throwaway PostgreSQL 15,
# one node on a ceph-fuse mount (tools/ceph-local.sh); table in bench/results/cluster.md (~4 minutes, at most 12).
bench-cluster: release bench-deps
	python3 bench/cluster.py

# The same reads with the access logs of nginx (to a file) and blobd (its default) both on,
# beside a blobd with its log off: blobd's log must cost under 10 % (< 4 minutes).
bench-logs: release bench-deps
	bench/run --access-logs --rounds 4 --servers nginx,blobd --workloads upload,ranged,get_small --out bench/results/access-logs.md

bench-deps: test-deps
	$(call apt_install,$(BENCH_PACKAGES))
