#!/usr/bin/env bash
# Property-based fuzzing of the Users API's published OpenAPI document with Schemathesis 3.21,
# as a signed-in user and as an admin, with every Schemathesis check (--checks all).
#
# Usage:
#   FUZZ_PY_SRC=DIR FUZZ_ADMIN_EMAIL=... FUZZ_ADMIN_PASSWORD=... test/fuzz/schemathesis.sh BASE_URL [PASS...]
#   test/fuzz/schemathesis.sh setup-apt                 install the Debian packages (root)
#   FUZZ_PY_SRC=DIR test/fuzz/schemathesis.sh setup-src  clone the pinned Python sources into DIR (needs git access)
#
#   BASE_URL  the running service, e.g. http://127.0.0.1:3300 (its document: BASE_URL/api/openapi.json)
#   PASS      user | admin | negative | destructive (default: all four, in that order)
#     user         every operation but DELETE /users/{id} and POST /auth/logout, as a new user
#     admin        the same, less turning MFA on (it would lock the admin out of password sign-in), as the admin
#     negative     the user's and the admin's operations again with schema-violating data (-D negative)
#     destructive  DELETE /users/{id} and POST /auth/logout, as both, re-signing in before each example
#
# The script signs in by itself (tokens live 15 min, a step-up 5 min: both are renewed every
# FUZZ_REFRESH_S=240 s) from FUZZ_AUTH_SOURCE (default 127.0.0.2 on a loopback service), so fuzzed
# wrong passwords (sent from 127.0.0.1) never lock its accounts out. The service should run with
# generous rate limits, MFA_REQUIRED_ROLES=none and a large SESSION_MAX_CONCURRENT, e.g.
#   RATE_LIMIT_MAX=1000000 RATE_LIMIT_AUTH_MAX=1000000 RATE_LIMIT_ADMIN_MAX=1000000 \
#   MFA_REQUIRED_ROLES=none SESSION_MAX_CONCURRENT=1000 ADMIN_EMAIL=... ADMIN_PASSWORD=... npx tsx src/server.ts
#
# Other settings: FUZZ_MAX_EXAMPLES (40), FUZZ_SEED (20240601), FUZZ_WORKERS (1), FUZZ_OUT (./fuzz-out),
# FUZZ_PYTHON (/usr/bin/python3: Debian's, where the packages below live), FUZZ_ID_PROBABILITY (0.5:
# how often {id} in /users/{id}… and /posts/{id}… is a real id: the user's own, the admin's victim
# user, a seeded post and comment), FUZZ_MAIL_LOG (the service's log file, with LOG_LEVEL=info and SMTP_URL
# unset: the signed-up user then verifies its e-mail address from it, so MFA and passkey routes get
# past 403 EMAIL_NOT_VERIFIED). At the end, report.txt lists every 5xx, every schema-valid request
# refused with 400 VALIDATION_FAILED (constraints the document does not state), and every declared
# response header whose value does not match its schema. Exit status: 0 when every Schemathesis check
# passed and the report found no 5xx and no header mismatch, 1 otherwise.
set -euo pipefail

APT_PACKAGES="git python3 python3-hypothesis python3-jsonschema python3-requests python3-yaml python3-click
  python3-werkzeug python3-pytest python3-pytest-subtests python3-attr python3-junit.xml python3-starlette
  python3-yarl python3-tomli python3-tomli-w python3-typing-extensions python3-backoff python3-httpx
  python3-pyrsistent python3-colorama python3-packaging"

# Pure-Python sources Debian bookworm lacks, pinned to releases whose ranges fit its packages
# (hypothesis 6.67, jsonschema 4.10, pytest 7.2): directory  repository  commit (tag)
SOURCES="
schemathesis-3.21.2          schemathesis/schemathesis              8ab489d12fbfc04315d9d2245cffda81734a2fac v3.21.2
hypothesis-jsonschema-0.22.1 python-jsonschema/hypothesis-jsonschema e393e2d5f20d713fe278fd5b25b9fb94af7f30f3 0.22.1
hypothesis-graphql-0.10.0    Stranger6667/hypothesis-graphql        2659d51de161d0108af3a9877d971fd8a5c648d1 v0.10.0
graphql-core-3.2.3           graphql-python/graphql-core            430ee891a52d239adadf133d873fdca2a3fe009b v3.2.3
starlette-testclient-0.2.0   Kludex/starlette-testclient            dafbc0765925587a70182b6eb1ae5637adc3c8e8 0.2.0
pyrate-limiter-2.10.0        vutran1710/PyrateLimiter               c4a56878e5e91775856ed3280edf04478bd276e8 v2.10.0
"
# Import roots inside each directory, in the order of SOURCES.
ROOTS="schemathesis-3.21.2/src hypothesis-jsonschema-0.22.1/src hypothesis-graphql-0.10.0/src graphql-core-3.2.3/src
  starlette-testclient-0.2.0 pyrate-limiter-2.10.0"

case "${1:-}" in
  setup-apt)
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_PACKAGES
    exit 0 ;;
  setup-src)
    : "${FUZZ_PY_SRC:?set FUZZ_PY_SRC to the directory for the sources}"
    mkdir -p "$FUZZ_PY_SRC"
    echo "$SOURCES" | while read -r dir repo commit _tag; do
      [ -n "$dir" ] || continue
      d="$FUZZ_PY_SRC/$dir"
      # Kept: an exported tree (no .git), or a checkout of the pinned commit; redone: anything else.
      if [ -d "$d" ] && { [ ! -d "$d/.git" ] || [ "$(git -C "$d" rev-parse HEAD 2>/dev/null)" = "$commit" ]; }; then continue; fi
      rm -rf "$d"
      git init -q "$FUZZ_PY_SRC/$dir"
      git -C "$FUZZ_PY_SRC/$dir" fetch -q --depth 1 "${FUZZ_GIT_BASE:-https://github.com}/$repo" "$commit"
      git -C "$FUZZ_PY_SRC/$dir" checkout -q FETCH_HEAD
    done
    exit 0 ;;
  ""|-h|--help) sed -n '2,32p' "$0"; exit 2 ;;
esac

BASE_URL="${1%/}"; shift
PASSES="${*:-user admin negative destructive}"
: "${FUZZ_PY_SRC:?set FUZZ_PY_SRC to the directory holding the Python sources (test/fuzz/schemathesis.sh setup-src)}"
: "${FUZZ_ADMIN_EMAIL:?set FUZZ_ADMIN_EMAIL}" "${FUZZ_ADMIN_PASSWORD:?set FUZZ_ADMIN_PASSWORD}"
PY="${FUZZ_PYTHON:-/usr/bin/python3}"
OUT="${FUZZ_OUT:-./fuzz-out}"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-40}"
SEED="${FUZZ_SEED:-20240601}"
WORKERS="${FUZZ_WORKERS:-1}"
mkdir -p "$OUT/hooks"
OUT="$(cd "$OUT" && pwd)"

PYTHONPATH="$OUT/hooks"
for root in $ROOTS; do
  [ -d "$FUZZ_PY_SRC/$root" ] || { echo "missing $FUZZ_PY_SRC/$root (test/fuzz/schemathesis.sh setup-src)" >&2; exit 2; }
  PYTHONPATH="$PYTHONPATH:$FUZZ_PY_SRC/$root"
done
export PYTHONPATH SCHEMATHESIS_HOOKS=fuzz_hooks FUZZ_BASE_URL="$BASE_URL" FUZZ_ADMIN_EMAIL FUZZ_ADMIN_PASSWORD
# FUZZ_MAIL_LOG (optional): the service's log (LOG_LEVEL=info, SMTP_URL unset), to verify the user's e-mail.

cat > "$OUT/hooks/fuzz_hooks.py" <<'PYEOF'
"""Schemathesis 3.x hooks for fuzzing the Users API as a signed-in user or as an admin.

Loaded with SCHEMATHESIS_HOOKS=fuzz_hooks (this file's folder on PYTHONPATH). Configured by:

  FUZZ_BASE_URL        the service, e.g. http://127.0.0.1:3300 (required)
  FUZZ_ROLE            user | admin
  FUZZ_ADMIN_EMAIL / FUZZ_ADMIN_PASSWORD   the admin's credentials (admin role)
  FUZZ_USER_EMAIL / FUZZ_USER_PASSWORD     an existing user's (user role; unset: one is signed up)
  FUZZ_AUTH_SOURCE     source address for this file's own sign-in requests (default 127.0.0.2 for a
                       loopback service; "" for none). Lockout and rate limits count per client
                       address, so fuzzed wrong passwords (sent from 127.0.0.1) cannot lock these out.
  FUZZ_ID_PROBABILITY  0..1, how often a path's {id}/{commentId} is replaced by a real one (0.5)
  FUZZ_MAIL_LOG        optional: the service's log file (LOG_LEVEL=info, SMTP_URL unset); a signed-up
                       user then verifies its e-mail address with the token written there, so the
                       routes that need a verified address (MFA, passkeys) are fuzzed past that 403

Access tokens live 15 minutes and a step-up (POST /auth/reauthenticate) 5 minutes, so the token is
renewed every FUZZ_REFRESH_S seconds (default 240): sign in again (or refresh), then step up. If the
user account became unusable (e-mail or password changed, MFA turned on, deleted), a new user is
signed up; the admin falls back to its refresh token.
"""
import http.client
import json
import os
import secrets
import sys
import threading
import time
from urllib.parse import urlsplit

import hypothesis.strategies as st
import schemathesis

BASE = os.environ["FUZZ_BASE_URL"].rstrip("/")
API = "/api/v1"
ROLE = os.environ.get("FUZZ_ROLE", "user")
REFRESH_S = int(os.environ.get("FUZZ_REFRESH_S", "240"))
ID_PROBABILITY = float(os.environ.get("FUZZ_ID_PROBABILITY", "0.5"))
_parts = urlsplit(BASE)
_loopback = (_parts.hostname or "").startswith("127.") or _parts.hostname in ("localhost", "::1")
SOURCE = os.environ.get("FUZZ_AUTH_SOURCE", "127.0.0.2" if _loopback else "")


def log(message):
    print(f"[fuzz_hooks:{ROLE}] {message}", file=sys.stderr, flush=True)


def call(method, path, body=None, token=None):
    """One request from SOURCE; returns (status, parsed JSON or None)."""
    conn_class = http.client.HTTPSConnection if _parts.scheme == "https" else http.client.HTTPConnection
    kwargs = {"timeout": 30}
    if SOURCE:
        kwargs["source_address"] = (SOURCE, 0)
    conn = conn_class(_parts.hostname, _parts.port, **kwargs)
    headers = {"Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body)
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, _parts.path.rstrip("/") + path, body=payload, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        return response.status, data
    finally:
        conn.close()


class State:
    """The fuzzing account, its token, and real ids that path parameters may take."""

    def __init__(self):
        self.lock = threading.RLock()
        self.ready = False
        self.email = self.password = None
        self.access = self.refresh = None
        self.self_id = None
        self.victim_id = None
        self.post_id = self.comment_id = None

    # -- accounts ---------------------------------------------------------------------------
    def sign_up(self, prefix):
        email = f"{prefix}-{secrets.token_hex(6)}@example.com"
        password = "Fuzz-" + secrets.token_urlsafe(12)
        status, data = call("POST", f"{API}/users", {"email": email, "name": f"Fuzz {prefix}", "password": password})
        if status != 201:
            raise RuntimeError(f"sign-up of {email} answered {status}: {data}")
        return email, password, data["data"]["id"]

    def login(self):
        status, data = call("POST", f"{API}/auth/login", {"email": self.email, "password": self.password})
        tokens = (data or {}).get("data") or {}
        if status != 200 or "access_token" not in tokens:
            return False
        self.access, self.refresh = tokens["access_token"], tokens.get("refresh_token")
        return True

    def use_refresh_token(self):
        if not self.refresh:
            return False
        status, data = call("POST", f"{API}/auth/refresh", {"refresh_token": self.refresh})
        tokens = (data or {}).get("data") or {}
        if status != 200 or "access_token" not in tokens:
            return False
        self.access, self.refresh = tokens["access_token"], tokens.get("refresh_token", self.refresh)
        return True

    def step_up(self):
        status, data = call("POST", f"{API}/auth/reauthenticate", {"password": self.password}, self.access)
        if status != 200:
            log(f"reauthenticate answered {status}: {data}")

    def verify_email(self):
        """With FUZZ_MAIL_LOG: ask for a verification message, read its token from the log, use it."""
        mail_log = os.environ.get("FUZZ_MAIL_LOG")
        if not mail_log:
            return False
        call("POST", f"{API}/auth/email/verification", {}, self.access)
        for _ in range(20):
            time.sleep(0.25)
            token = None
            with open(mail_log, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if self.email not in line or "Token: " not in line:
                        continue
                    try:
                        text = json.loads(line).get("text", "")
                    except ValueError:
                        continue
                    if "Token: " in text:
                        token = text.split("Token: ", 1)[1].split()[0]
            if token:
                status, data = call("POST", f"{API}/auth/email/verify", {"token": token})
                log(f"verified {self.email}: {status}")
                return True
        log(f"no verification token for {self.email} in {mail_log}")
        return False

    def new_user(self):
        self.email, self.password, self.self_id = self.sign_up("fuzz-user")
        if not self.login():
            raise RuntimeError("a freshly signed-up user cannot sign in")
        log(f"signed up {self.email} ({self.self_id})")
        if self.verify_email() and not self.login():  # verifying ends the sessions: sign in again
            raise RuntimeError("a freshly verified user cannot sign in")

    # -- seeding ----------------------------------------------------------------------------
    def seed_content(self):
        status, data = call("POST", f"{API}/posts", {"title": "Fuzz seed", "body": "Seed post", "status": "published"}, self.access)
        if status == 201:
            self.post_id = data["data"]["id"]
            status, data = call("POST", f"{API}/posts/{self.post_id}/comments", {"body": "Seed comment"}, self.access)
            if status == 201:
                self.comment_id = data["data"]["id"]
        log(f"seeded post {self.post_id}, comment {self.comment_id}")

    def ensure(self):
        with self.lock:
            if self.ready:
                return
            if ROLE == "admin":
                self.email = os.environ["FUZZ_ADMIN_EMAIL"]
                self.password = os.environ["FUZZ_ADMIN_PASSWORD"]
                if not self.login():
                    raise RuntimeError(f"the admin {self.email} cannot sign in")
                status, me = call("GET", f"{API}/auth/me", token=self.access)
                self.self_id = me["data"]["id"]
                # The admin's {id} is another account: the admin's own would be worn down by the run.
                _, _, self.victim_id = self.sign_up("fuzz-victim")
                log(f"admin {self.self_id}; victim user {self.victim_id}")
            else:
                self.email = os.environ.get("FUZZ_USER_EMAIL") or None
                self.password = os.environ.get("FUZZ_USER_PASSWORD") or None
                if self.email and self.login():
                    status, me = call("GET", f"{API}/auth/me", token=self.access)
                    self.self_id = me["data"]["id"]
                else:
                    self.new_user()
            self.step_up()
            self.seed_content()
            self.ready = True

    def renew(self):
        """A fresh, stepped-up access token."""
        with self.lock:
            if not self.ready:
                self.ensure()
                return self.access
            if not self.login():
                if ROLE == "admin":
                    if not self.use_refresh_token():
                        raise RuntimeError("the admin can neither sign in nor refresh")
                    log("admin signed in no more; using its refresh token")
                else:
                    log(f"{self.email} signs in no more; signing up another user")
                    self.new_user()
            self.step_up()
            return self.access

    def user_target(self):
        return self.victim_id if ROLE == "admin" else self.self_id


STATE = State()


@schemathesis.auth(refresh_interval=REFRESH_S)
class BearerAuth:
    def get(self, case, context):
        return STATE.renew()

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


def _with_real_ids(path):
    def replace(pair):
        params, roll = pair
        if roll >= ID_PROBABILITY or not isinstance(params, dict):
            return params
        STATE.ensure()
        params = dict(params)
        if path.startswith(f"{API}/users/{{id}}") and "id" in params and STATE.user_target():
            params["id"] = STATE.user_target()
        elif path.startswith(f"{API}/posts/{{id}}") and STATE.post_id:
            if "id" in params:
                params["id"] = STATE.post_id
            if "commentId" in params and STATE.comment_id:
                params["commentId"] = STATE.comment_id
        return params
    return replace


@schemathesis.hook
def before_generate_path_parameters(context, strategy):
    path = context.operation.path if context.operation is not None else ""
    if ID_PROBABILITY <= 0 or not (path.startswith(f"{API}/users/{{id}}") or path.startswith(f"{API}/posts/{{id}}")):
        return strategy
    return st.tuples(strategy, st.floats(min_value=0, max_value=1, exclude_max=True)).map(_with_real_ids(path))
PYEOF

cat > "$OUT/hooks/fuzz_report.py" <<'PYEOF'
"""Reads the passes' Schemathesis cassettes and prints (1) every 5xx, (2) every 400 VALIDATION_FAILED
answered to schema-valid data in the positive passes, grouped by operation and message: a constraint
the document does not state, and (3) every response header the document declares whose value does
not match its schema, or that is missing though required (Schemathesis 3.21 checks presence only).
Usage: fuzz_report.py OPENAPI.json OUT_DIR; exit 1 when there is a 5xx or a header mismatch."""
import collections, glob, json, os, re, sys
import jsonschema, yaml

doc = json.load(open(sys.argv[1]))
out = sys.argv[2]
UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')

def resolve(node):
    while isinstance(node, dict) and '$ref' in node:
        target = doc
        for part in node['$ref'].lstrip('#/').split('/'):
            target = target[part]
        node = target
    return node

routes = [(re.compile('^' + re.sub(r'\\\{[^}]+\\\}', '[^/]+', re.escape(p)) + '$'), p, item) for p, item in doc['paths'].items()]
def operation(method, url):
    path = '/' + url.split('?')[0].split('/', 3)[-1]
    for rx, template, item in routes:
        if rx.match(path) and method.lower() in item:
            return template, item[method.lower()]
    return path, None

server_errors, refusals, header_problems = collections.Counter(), collections.Counter(), collections.Counter()
examples, total, headers_checked = {}, 0, 0
for cassette in sorted(glob.glob(os.path.join(out, '*.cassette.yaml'))):
    positive = not os.path.basename(cassette).startswith('negative')
    for it in yaml.load(open(cassette), Loader=yaml.CSafeLoader)['http_interactions']:
        total += 1
        req, resp = it['request'], it['response']
        status = resp['status']['code']
        body = (resp.get('body') or {}).get('string') or ''
        template, op = operation(req['method'], req['uri'])
        sample = (req['method'], req['uri'], ((req.get('body') or {}).get('string') or '')[:300], body[:300])
        if status.startswith('5'):
            key = (req['method'], template, status, body[:160])
            server_errors[key] += 1; examples.setdefault(key, sample)
        elif positive and status == '400' and 'VALIDATION_FAILED' in body:
            try:
                details = json.loads(body)['error'].get('details') or []
            except (ValueError, KeyError, AttributeError):
                details = []
            for d in details or [{'path': '', 'message': body[:100]}]:
                message = re.sub(r'"[^"]*"', '"…"', d.get('message', ''))[:90]
                where = re.sub(r'/.*', '/…', d.get('path', '')[1:]) if 'U+0000' in message else d.get('path', '')
                key = (req['method'], template, where, message)
                refusals[key] += 1; examples.setdefault(key, sample)
        if op is None:
            continue
        spec = resolve(op['responses'].get(status) or op['responses'].get(status[0] + 'XX') or op['responses'].get('default') or {})
        got = {k.lower(): (v[0] if isinstance(v, list) else v) for k, v in resp['headers'].items()}
        for name, hdef in (spec.get('headers') or {}).items():
            hdef, value = resolve(hdef), got.get(name.lower())
            if value is None:
                if hdef.get('required'):
                    key = (req['method'], template, status, name, 'missing')
                    header_problems[key] += 1; examples.setdefault(key, sample)
                continue
            if value == '[Filtered]':
                continue  # run with --sanitize-output false to check these
            schema = resolve(hdef.get('schema') or {})
            instance = value
            if schema.get('type') in ('integer', 'number'):
                try:
                    instance = int(value) if schema['type'] == 'integer' else float(value)
                except ValueError:
                    pass
            headers_checked += 1
            error = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(instance)), None)
            if error is not None:
                key = (req['method'], template, status, name, f'{value!r}: {error.message[:100]}')
                header_problems[key] += 1; examples.setdefault(key, sample)

def show(title, counter):
    print(f'\n## {title}: {sum(counter.values())} answers, {len(counter)} distinct')
    for key, n in sorted(counter.items()):
        method, uri, request_body, response_body = examples[key]
        print(f'{n:5d}x ' + ' | '.join(key))
        print(f'        e.g. {method} {uri[:200]}' + (f'  body={request_body[:200]!r}' if request_body else ''))
        print(f'        ->   {response_body[:200]}')

print(f'interactions: {total}; declared header values checked: {headers_checked}')
show('5xx answers', server_errors)
show('schema-valid requests refused with 400 VALIDATION_FAILED (constraints the document does not state)', refusals)
show('declared response headers missing or not matching their schema', header_problems)
sys.exit(1 if server_errors or header_problems else 0)
PYEOF

# $1 pass name, $2 role, $3 operationId regex (Python re.search), then extra options
fuzz () {
  local name="$1" role="$2" ops="$3"; shift 3
  echo "=== pass $name as $role: $(date -u +%FT%TZ)"
  local start; start=$(date +%s)
  FUZZ_ROLE="$role" "$PY" -c 'from schemathesis.cli import schemathesis; schemathesis()' run \
    "$BASE_URL/api/openapi.json" --base-url "$BASE_URL" \
    --experimental=openapi-3.1 --contrib-openapi-formats-uuid \
    --checks all --workers "$WORKERS" --hypothesis-max-examples "$MAX_EXAMPLES" \
    --hypothesis-seed "$SEED" --hypothesis-database none \
    --hypothesis-suppress-health-check data_too_large,filter_too_much,too_slow,large_base_example --request-timeout 20000 \
    --operation-id "$ops" --code-sample-style curl --show-errors-tracebacks \
    --cassette-path "$OUT/$name.cassette.yaml" --junit-xml "$OUT/$name.junit.xml" \
    --sanitize-output false --schemathesis-io-telemetry false --no-color "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== pass $name: exit $rc, $(( $(date +%s) - start )) s"
  return "$rc"
}

status=0
for pass in $PASSES; do
  case "$pass" in
    user)  fuzz user user '^(?!(users\.delete|auth\.logout)$)' || status=1 ;;
    admin) fuzz admin admin '^(?!(users\.delete|auth\.logout|auth\.mfa\.(totp|email|sms)\.enable)$)' || status=1 ;;
    negative)
      # Real ids would make schema-violating path parameters valid again: none here.
      FUZZ_ID_PROBABILITY=0 fuzz negative-user user '^(?!(users\.delete|auth\.logout)$)' --data-generation-method negative || status=1
      FUZZ_ID_PROBABILITY=0 fuzz negative-admin admin '^(?!(users\.delete|auth\.logout|auth\.mfa\.(totp|email|sms)\.enable)$)' --data-generation-method negative || status=1 ;;
    destructive)
      # A new token (and, once the account is gone, a new user) for every example.
      FUZZ_REFRESH_S=0 fuzz destructive-user user '^(users\.delete|auth\.logout)$' || status=1
      FUZZ_REFRESH_S=0 fuzz destructive-admin admin '^(users\.delete|auth\.logout)$' || status=1 ;;
    *) echo "unknown pass $pass" >&2; exit 2 ;;
  esac
done
"$PY" -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1]).read())' \
  "$BASE_URL/api/openapi.json" "$OUT/openapi.json"
"$PY" "$OUT/hooks/fuzz_report.py" "$OUT/openapi.json" "$OUT" | tee "$OUT/report.txt" || status=1
echo "Logs, network cassettes (unsanitized: they hold the runs' tokens), JUnit reports, report.txt: $OUT"
exit "$status"
