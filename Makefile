# Taskdeck — two commands matter: `make run` and `make test`. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
# web processes sharing PORT in `make run` (one per core of a 2-core machine; docs/production.md)
WEB ?= 2
# the gRPC binding's port in `make run` (0: none; `make scale-out` uses 50052)
GRPC_PORT ?= 50051
PG_URL ?= postgres://postgres@127.0.0.1:5432/taskdeck
REDIS ?= redis://127.0.0.1:6379/0

.PHONY: run scale-out test test-sqlite test-postgres lint install clean
.PHONY: interop-venv acp-peers test-tools

# The official a2a-sdk client for tests/interop lives in its own virtualenv: its import name
# is `a2a`, like our Django app, so it must never be installed into $(VENV). The http-server
# and postgresql (SQLAlchemy, asyncpg) extras and uvicorn serve bench/sdk_server.py, in
# memory and on PostgreSQL (bench/load.py); the grpc extra gives its client the gRPC binding
# (tests/interop drives each of Taskdeck's three bindings with it).
INTEROP_SDK := a2a-sdk[http-server,postgresql,grpc]==1.3.0 uvicorn==0.54.0
INTEROP := .venv-interop
INTEROP_STAMP := $(INTEROP)/.installed-$(shell echo '$(INTEROP_SDK)' | sha1sum | cut -c1-12)

# The gRPC binding's code (a2a/grpc_door) is generated from its .proto files by grpcio-tools'
# protoc at install, never committed (.gitignore). The include maps the proto directory onto
# the package path the code is imported from, so the modules import each other as
# a2a.grpc_door.generated.*; google/api/*.proto come from googleapis-common-protos. It is made
# again when a .proto changes or the code is missing (a fresh clone, `make clean`).
GRPC_PROTO := a2a/grpc_door/proto
GRPC_OUT := a2a/grpc_door/generated
GRPC_SOURCES := $(wildcard $(GRPC_PROTO)/*.proto) $(if $(wildcard $(GRPC_OUT)/__init__.py),,grpc-missing)

$(STAMP): pyproject.toml $(GRPC_SOURCES)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	@rm -rf $(GRPC_OUT) && mkdir -p $(GRPC_OUT)
	$(PY) -m grpc_tools.protoc -I$(GRPC_OUT)=$(GRPC_PROTO) \
	  -I"$$($(PY) -c 'import pathlib, google.api.http_pb2 as m; print(pathlib.Path(m.__file__).parents[2])')" \
	  --python_out=. --pyi_out=. --grpc_python_out=. $(GRPC_PROTO)/*.proto
	@touch $(GRPC_OUT)/__init__.py  # last: a failed protoc leaves it missing, so it runs again
	@rm -f $(VENV)/.installed-*; touch $@

.PHONY: grpc-missing
grpc-missing:

install: $(STAMP)

$(INTEROP_STAMP):
	@test -x $(INTEROP)/bin/python || $(PYTHON) -m venv $(INTEROP)
	$(INTEROP)/bin/pip install --quiet $(foreach r,$(INTEROP_SDK),"$(r)")
	@rm -f $(INTEROP)/.installed-*; touch $@

interop-venv: $(INTEROP_STAMP)

# Real ACP peers, installed with the machine's Node.js into .acp-peers/ (never committed):
# the acpx command-line client (npm, MIT) for tests/runtime/test_acpx.py, and the official
# TypeScript SDK (npm, Apache-2.0), whose example agent tests/runtime/test_acp_host.py hosts.
ACP_PEERS := .acp-peers
ACPX_VERSION := 0.19.1
ACP_TS_SDK_VERSION := 1.9.0
ACPX_STAMP := $(ACP_PEERS)/.installed-acpx-$(ACPX_VERSION)-sdk-$(ACP_TS_SDK_VERSION)

$(ACPX_STAMP):
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm install --prefix $(ACP_PEERS) --no-audit --no-fund --loglevel=error \
	  acpx@$(ACPX_VERSION) @agentclientprotocol/sdk@$(ACP_TS_SDK_VERSION)
	@rm -f $(ACP_PEERS)/.installed-*; touch $@

acp-peers: $(ACPX_STAMP)

# axe-core (npm, MPL-2.0), the accessibility engine tests/browser/test_accessibility.py runs
# in Chromium on every page, light and dark, phone and desktop. Into .test-tools/, never
# committed.
TEST_TOOLS := .test-tools
AXE_VERSION := 4.14.1
AXE_STAMP := $(TEST_TOOLS)/.installed-axe-$(AXE_VERSION)

$(AXE_STAMP):
	@command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm install --prefix $(TEST_TOOLS) --no-audit --no-fund --loglevel=error axe-core@$(AXE_VERSION)
	@rm -f $(TEST_TOOLS)/.installed-*; touch $@

test-tools: $(AXE_STAMP)

## Run Taskdeck on 127.0.0.1:8000 with demo data: 2 web processes, 2 agent workers and the
## scheduler (SQLite, in-memory channel layer). DEBUG is on unless TASKDECK_DEBUG=0, and
## with it on `serve` refuses any HOST but loopback (docs/production.md, "Security").
run: $(STAMP)
	@mkdir -p var
	@test -s var/dev-secret-key || $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > var/dev-secret-key
	@export DJANGO_SECRET_KEY="$$(cat var/dev-secret-key)" TASKDECK_DEBUG=$${TASKDECK_DEBUG:-1}; \
	  $(PY) manage.py serve --host $(HOST) --port $(PORT) --grpc-port $(GRPC_PORT) --check >/dev/null && \
	  $(PY) manage.py migrate --noinput -v0 && \
	  $(PY) manage.py seed_demo --force --url http://$(HOST):$(PORT) && \
	  exec $(PY) manage.py serve --host $(HOST) --port $(PORT) --web $(WEB) --workers 2 \
	    --grpc-port $(GRPC_PORT)

## Scale-out on one machine: PostgreSQL + Redis (DATABASE_URL / REDIS_URL below), two web
## processes on 8001 and 8002, the gRPC binding on 50052 (`make run`'s is on 50051, so both
## can run), two agent workers and the scheduler. Ctrl+C stops them all.
scale-out: $(STAMP)
	@mkdir -p var
	@test -s var/dev-secret-key || $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > var/dev-secret-key
	@$(PY) -c "import psycopg; c=psycopg.connect('$(PG_URL)'.rsplit('/',1)[0]+'/postgres', autocommit=True); n='$(PG_URL)'.rsplit('/',1)[1]; c.execute(f'CREATE DATABASE {n}') if not c.execute('SELECT 1 FROM pg_database WHERE datname=%s', (n,)).fetchone() else None"
	@export DJANGO_SECRET_KEY="$$(cat var/dev-secret-key)" TASKDECK_DEBUG=$${TASKDECK_DEBUG:-1} \
	  DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS); \
	  $(PY) manage.py serve --host $(HOST) --port 8001,8002 --grpc-port 50052 --check >/dev/null && \
	  $(PY) manage.py migrate --noinput -v0 && \
	  $(PY) manage.py seed_demo --force --url http://$(HOST):8001 && \
	  exec $(PY) manage.py serve --host $(HOST) --port 8001,8002 --grpc-port 50052 --workers 2

## Install test dependencies and run the whole suite: SQLite and, side by side, PostgreSQL +
## Redis when reachable (required when TASKDECK_REQUIRE_POSTGRES=1, as in CI).
test: $(STAMP)
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }
	$(VENV)/bin/ruff check .
	@$(MAKE) --no-print-directory interop-venv acp-peers test-tools
	@# Five pytest processes side by side: each database's tests without a browser in two
	@# halves (the runtime's and the ACP door's tests, which wait on the processes they start,
	@# and the rest), and the browser tests of both databases in turn. They share nothing
	@# (own test databases, ports, Redis databases); run alone, each keeps half a core busy
	@# (docs/testing.md). Each one's output is printed whole when it ends (--output-sync).
	@if $(PY) -c "import psycopg,sys; psycopg.connect('$(PG_URL)'.rsplit('/',1)[0]+'/postgres', connect_timeout=3).close()" 2>/dev/null; then \
	  $(MAKE) --no-print-directory -j5 --output-sync=target test-sqlite-processes \
	    test-sqlite-rest test-postgres-processes test-postgres-rest test-browsers; \
	elif [ "$$TASKDECK_REQUIRE_POSTGRES" = "1" ]; then \
	  echo "PostgreSQL is not reachable at $(PG_URL) and TASKDECK_REQUIRE_POSTGRES=1"; exit 1; \
	else $(MAKE) --no-print-directory test-sqlite; \
	  echo "PostgreSQL not reachable: skipped the PostgreSQL run"; fi

.PHONY: test-sqlite-unit test-sqlite-browser test-postgres-unit test-postgres-browser test-browsers
.PHONY: test-sqlite-processes test-sqlite-rest test-postgres-processes test-postgres-rest
PG_TEST_ENV = DATABASE_URL=$(PG_URL) TASKDECK_EXPECT_POSTGRES=1
# each PostgreSQL run has a Redis database of its own on REDIS's server (they may run side
# by side): REDIS without its database number
REDIS_DB = $(patsubst %/,%,$(dir $(REDIS)))
# the tests that start and wait on Taskdeck's processes and ACP peers (one half of a run)
PROCESS_TESTS = tests/runtime tests/acp_door
NOT_PROCESS_TESTS = $(foreach d,$(PROCESS_TESTS),--ignore=$(d))

# Browser tests run in their own pytest process: sync Playwright keeps an event loop in
# the main thread, which the async and ORM tests must not share
# (docs/design/platform-facts.md, D77).
test-sqlite: test-sqlite-unit test-sqlite-browser
test-postgres: test-postgres-unit test-postgres-browser

test-sqlite-unit: $(STAMP) interop-venv acp-peers test-tools
	$(VENV)/bin/pytest -p no:cacheprovider tests --ignore=tests/browser

test-sqlite-processes: $(STAMP) interop-venv acp-peers test-tools
	$(VENV)/bin/pytest -p no:cacheprovider $(PROCESS_TESTS)

test-sqlite-rest: $(STAMP) interop-venv acp-peers test-tools
	$(VENV)/bin/pytest -p no:cacheprovider tests --ignore=tests/browser $(NOT_PROCESS_TESTS)

test-sqlite-browser: $(STAMP) interop-venv acp-peers test-tools
	$(VENV)/bin/pytest -p no:cacheprovider tests/browser

test-postgres-unit: $(STAMP) interop-venv acp-peers test-tools
	$(PG_TEST_ENV) REDIS_URL=$(REDIS) $(VENV)/bin/pytest -p no:cacheprovider tests --ignore=tests/browser

test-postgres-processes: $(STAMP) interop-venv acp-peers test-tools
	$(PG_TEST_ENV) REDIS_URL=$(REDIS_DB)/2 $(VENV)/bin/pytest -p no:cacheprovider $(PROCESS_TESTS)

test-postgres-rest: $(STAMP) interop-venv acp-peers test-tools
	$(PG_TEST_ENV) REDIS_URL=$(REDIS_DB)/3 $(VENV)/bin/pytest -p no:cacheprovider tests \
	  --ignore=tests/browser $(NOT_PROCESS_TESTS)

# the browser tests marked `pages` (layout, accessibility, page tools) do not depend on the
# database: the SQLite run has them; the PostgreSQL run keeps the live-update ones
test-postgres-browser: $(STAMP) interop-venv acp-peers test-tools
	$(PG_TEST_ENV) REDIS_URL=$(REDIS_DB)/1 $(VENV)/bin/pytest -p no:cacheprovider tests/browser \
	  -m "not pages"

# the two browser runs one after the other: Chromium is the heaviest thing the suite starts
test-browsers:
	@$(MAKE) --no-print-directory test-sqlite-browser
	@$(MAKE) --no-print-directory test-postgres-browser

## The load benchmark, bench/load.py (about 10 minutes; needs PostgreSQL and Redis): wrk
## against Taskdeck (SQLite; PostgreSQL + Redis) and the a2a-sdk (in memory; PostgreSQL).
## Options through BENCH_ARGS, e.g. make bench-load BENCH_ARGS="--ops get,list --seconds 5".
.PHONY: bench-load
bench-load: $(STAMP) interop-venv
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
	$(PY) bench/load.py $(BENCH_ARGS)

## The scale benchmark, bench/scale.py: fills a throwaway database in bulk (SQLite, 100,000
## tasks; BENCH_ARGS="--scale-out": PostgreSQL + Redis, 1,000,000) and times each operation
## at empty, 10 % and full size (docs/production.md, "Scale"). About 10 minutes on SQLite,
## 30 on PostgreSQL; e.g. make bench-scale BENCH_ARGS="--tasks 20000 --ops get,list".
.PHONY: bench-scale
bench-scale: $(STAMP)
	$(PY) bench/scale.py $(BENCH_ARGS)

## The official A2A conformance kits against a fresh Taskdeck (docs/conformance.md):
## make conformance TCK03=<clone at tag 0.3.0.beta3> TCK10=<clone at branch 1.0-dev>
## (either may be left out). Kits' virtualenvs and reports under var/conformance/.
.PHONY: conformance
conformance: $(STAMP)
	$(PY) tests/conformance/run_kits.py $(if $(TCK03),--tck03 $(TCK03)) $(if $(TCK10),--tck10 $(TCK10)) $(CONFORMANCE_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) $(INTEROP) $(ACP_PEERS) $(TEST_TOOLS) $(GRPC_OUT) var .pytest_cache .ruff_cache
