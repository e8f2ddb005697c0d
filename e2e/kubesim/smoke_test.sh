#!/usr/bin/env bash
# kube-sim end to end over real HTTPS: start it on port 0, read the kubeconfig it writes and drive
# it with curl. Usage: smoke_test.sh PATH/TO/kube-sim
set -u
BIN=$1
DIR=$(mktemp -d /tmp/kubesim-smoke.XXXXXX)
PID=
FAILS=0
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
# until_true TRIES COMMAND...: polls every 0.1 s, at most TRIES times.
until_true() {
  local n=$1; shift
  for _ in $(seq 1 "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}

"$BIN" --listen 127.0.0.1:0 --kubeconfig-out "$DIR/kubeconfig" --history 8 \
  --client-kubeconfig-out "$DIR/client-kubeconfig" >"$DIR/log" 2>&1 &
PID=$!
until_true 200 test -s "$DIR/kubeconfig" || { fail "kubeconfig written"; cat "$DIR/log"; exit 1; }
SERVER=$(sed -n 's/^ *server: //p' "$DIR/kubeconfig")
TOKEN=$(sed -n 's/^ *token: //p' "$DIR/kubeconfig")
sed -n 's/^ *certificate-authority-data: //p' "$DIR/kubeconfig" | base64 -d >"$DIR/ca.crt"
[ "$(stat -c %a "$DIR/kubeconfig")" = 600 ] && ok "kubeconfig mode 0600" || fail "kubeconfig mode"
grep -q "listening on $SERVER" "$DIR/log" && ok "prints the address" || fail "prints the address"

# kc METHOD PATH [BODY]: body to $DIR/body, HTTP code on stdout.
kc() {
  local args=(-sS -o "$DIR/body" -w '%{http_code}' --cacert "$DIR/ca.crt" -X "$1"
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
  [ $# -ge 3 ] && args+=(--data-binary "$3")
  curl "${args[@]}" "$SERVER$2"
}
field() { python3 -c "import json,sys; d=json.load(open('$DIR/body')); print($1)"; }
expect() { # expect WHAT WANT GOT
  [ "$2" = "$3" ] && ok "$1" || { fail "$1: want $2, got $3"; cat "$DIR/body"; echo; }
}

code=$(curl -sS -o "$DIR/body" -w '%{http_code}' --cacert "$DIR/ca.crt" "$SERVER/api/v1/nodes")
expect "no token gets 401" 401 "$code"
expect "401 is a Status" Unauthorized "$(field 'd["reason"]')"
expect "create namespace" 201 "$(kc POST /api/v1/namespaces '{"metadata":{"name":"ns1"}}')"
expect "create node" 201 "$(kc POST /api/v1/nodes '{"metadata":{"name":"n1"}}')"
node_uid=$(field 'd["metadata"]["uid"]')
rv=$(field 'd["metadata"]["resourceVersion"]')
expect "get node" 200 "$(kc GET /api/v1/nodes/n1)"
expect "duplicate create gets 409" 409 "$(kc POST /api/v1/nodes '{"metadata":{"name":"n1"}}')"
expect "409 reason" AlreadyExists "$(field 'd["reason"]')"
expect "claim in a missing namespace gets 404" 404 \
  "$(kc POST /apis/resource.k8s.io/v1/namespaces/nope/resourceclaims '{"metadata":{"name":"c"}}')"

slice='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s1","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"'$node_uid'"}]},"spec":{"driver":"xpu.dra.dev","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},"devices":[{"name":"npu-0","attributes":{"index":{"int":0}}}]}}'
expect "create slice owned by the node" 201 "$(kc POST /apis/resource.k8s.io/v1/resourceslices "$slice")"
expect "read the slice as v1beta1" 200 "$(kc GET /apis/resource.k8s.io/v1beta1/resourceslices/s1)"
expect "v1beta1 wraps device fields in basic" 0 "$(field 'd["spec"]["devices"][0]["basic"]["attributes"]["index"]["int"]')"

# A watch from the node's resourceVersion sees the later delete, and the GC deletes the slice.
curl -sN --max-time 20 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes?watch=1&resourceVersion=$rv&timeoutSeconds=15" >"$DIR/watch" 2>/dev/null &
WATCH=$!
expect "delete node" 200 "$(kc DELETE /api/v1/nodes/n1)"
until_true 100 grep -q '"type":"DELETED"' "$DIR/watch" && ok "watch delivers DELETED" \
  || fail "watch delivers DELETED: $(cat "$DIR/watch")"
kill "$WATCH" 2>/dev/null
expect "owned slice garbage-collected" 404 "$(kc GET /apis/resource.k8s.io/v1/resourceslices/s1)"

# More writes than the history holds: a watch from resourceVersion 1 gets 410 Expired.
for i in 1 2 3 4 5 6 7 8 9; do kc POST /api/v1/nodes "{\"metadata\":{\"name\":\"m$i\"}}" >/dev/null; done
curl -sN --max-time 10 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes?watch=1&resourceVersion=1" >"$DIR/w410" 2>/dev/null
grep -q '"code":410' "$DIR/w410" && ok "too old resourceVersion gets 410" || fail "410: $(cat "$DIR/w410")"

# /version follows --kube-version (default 1.35).
expect "version" 200 "$(kc GET /version)"
expect "gitVersion is v1.35.0" v1.35.0 "$(field 'd["gitVersion"]')"

# The client-certificate kubeconfig: a cert signed by kube-sim's CA authenticates without a token.
until_true 50 test -s "$DIR/client-kubeconfig" || fail "client kubeconfig written"
[ "$(stat -c %a "$DIR/client-kubeconfig")" = 600 ] && ok "client kubeconfig mode 0600" \
  || fail "client kubeconfig mode"
sed -n 's/^ *client-certificate-data: //p' "$DIR/client-kubeconfig" | base64 -d >"$DIR/client.crt"
sed -n 's/^ *client-key-data: //p' "$DIR/client-kubeconfig" | base64 -d >"$DIR/client.key"
grep -q 'token:' "$DIR/client-kubeconfig" && fail "client kubeconfig has no token" \
  || ok "client kubeconfig has no token"
code=$(curl -sS -o "$DIR/body" -w '%{http_code}' --cacert "$DIR/ca.crt" --cert "$DIR/client.crt" \
  --key "$DIR/client.key" "$SERVER/api/v1/nodes")
expect "client certificate authenticates" 200 "$code"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=stranger \
  -keyout "$DIR/other.key" -out "$DIR/other.crt" -days 1 2>/dev/null
code=$(curl -sS -o "$DIR/body" -w '%{http_code}' --cacert "$DIR/ca.crt" --cert "$DIR/other.crt" \
  --key "$DIR/other.key" "$SERVER/api/v1/nodes")
expect "a certificate from another CA gets 401" 401 "$code"

# 422 carries the causes.
expect "invalid DeviceClass gets 422" 422 "$(kc POST /apis/resource.k8s.io/v1/deviceclasses \
  '{"metadata":{"name":"gpu"},"spec":{"selectors":[{}]}}')"
expect "422 cause reason" FieldValueRequired "$(field 'd["details"]["causes"][0]["reason"]')"
expect "422 cause field" "spec.selectors[0].cel" "$(field 'd["details"]["causes"][0]["field"]')"

# deletecollection with a label selector.
for n in x1 x2; do
  kc POST /api/v1/nodes "{\"metadata\":{\"name\":\"$n\",\"labels\":{\"smoke\":\"yes\"}}}" >/dev/null
done
expect "deletecollection" 200 "$(kc DELETE '/api/v1/nodes?labelSelector=smoke%3Dyes')"
expect "deletecollection deleted two" 2 "$(field 'len(d["items"])')"
expect "list after deletecollection" 200 "$(kc GET '/api/v1/nodes?labelSelector=smoke%3Dyes')"
expect "nothing left" 0 "$(field 'len(d["items"])')"

# A list at a resourceVersion newer than the store: 504 Timeout.
expect "too large resourceVersion gets 504" 504 "$(kc GET '/api/v1/nodes?resourceVersion=99999')"
expect "504 reason" Timeout "$(field 'd["reason"]')"

# A watch through a label selector: ADDED when a node starts matching, DELETED when it stops.
kc POST /api/v1/nodes '{"metadata":{"name":"p1","labels":{"pool":"b"}}}' >/dev/null
curl -sN --max-time 20 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes?watch=1&labelSelector=pool%3Da&timeoutSeconds=15" >"$DIR/wsel" 2>/dev/null &
WATCH=$!
# No wait for the watch to start: if it starts after the first patch, p1 comes as an initial ADDED.
mp() { curl -sS -o /dev/null --cacert "$DIR/ca.crt" -X PATCH -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/merge-patch+json' --data-binary "$2" "$SERVER$1"; }
mp /api/v1/nodes/p1 '{"metadata":{"labels":{"pool":"a"}}}'
until_true 100 grep -q '"type":"ADDED"' "$DIR/wsel" && ok "selector watch: ADDED on entering" \
  || fail "selector watch ADDED: $(cat "$DIR/wsel")"
mp /api/v1/nodes/p1 '{"metadata":{"labels":{"pool":"c"}}}'
until_true 100 grep -q '"type":"DELETED"' "$DIR/wsel" && ok "selector watch: DELETED on leaving" \
  || fail "selector watch DELETED: $(cat "$DIR/wsel")"
kill "$WATCH" 2>/dev/null

# Faults at run time through the admin endpoint.
expect "set faults" 200 "$(kc POST /kube-sim/faults '{"rate":1,"codes":[503]}')"
code=$(curl -sS -D "$DIR/headers" -o "$DIR/body" -w '%{http_code}' --cacert "$DIR/ca.crt" \
  -H "Authorization: Bearer $TOKEN" "$SERVER/api/v1/nodes")
expect "injected 503" 503 "$code"
grep -qi '^Retry-After: 1' "$DIR/headers" && ok "503 carries Retry-After" || fail "Retry-After"
expect "drop every request" 200 "$(kc POST /kube-sim/faults '{"rate":0,"dropRate":1}')"
curl -sS -o /dev/null --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes" 2>/dev/null
expect "dropped connection: empty reply (curl 52)" 52 "$?"
expect "faults shown" 200 "$(kc GET /kube-sim/faults)"
expect "faults show dropRate" 1.0 "$(field 'd["dropRate"]')"
expect "stop dropping" 200 "$(kc POST /kube-sim/faults '{"dropRate":0}')"
expect "requests work again" 200 "$(kc GET /api/v1/nodes)"

kill -TERM "$PID"
if until_true 100 bash -c "! kill -0 $PID 2>/dev/null"; then
  wait "$PID"; rc=$?
  expect "SIGTERM stops it cleanly" 0 "$rc"
  [ "$rc" = 0 ] || tail -40 "$DIR/log"
else
  fail "SIGTERM stops it within 10 s"
fi
PID=
# A second instance with flags: 1.34 limits and /version, early watch close, added latency.
"$BIN" --listen 127.0.0.1:0 --kubeconfig-out "$DIR/kubeconfig2" --kube-version 1.34 \
  --watch-close-after 1 --latency-ms 200 --seed 3 >"$DIR/log2" 2>&1 &
PID=$!
until_true 200 test -s "$DIR/kubeconfig2" || { fail "second kubeconfig written"; cat "$DIR/log2"; }
SERVER=$(sed -n 's/^ *server: //p' "$DIR/kubeconfig2")
TOKEN=$(sed -n 's/^ *token: //p' "$DIR/kubeconfig2")
sed -n 's/^ *certificate-authority-data: //p' "$DIR/kubeconfig2" | base64 -d >"$DIR/ca.crt"
kc GET /version >/dev/null
expect "--kube-version 1.34 in /version" v1.34.0 "$(field 'd["gitVersion"]')"
taints='[{"key":"a","effect":"NoSchedule"},{"key":"b","effect":"NoSchedule"},{"key":"c","effect":"NoSchedule"},{"key":"d","effect":"NoSchedule"},{"key":"e","effect":"NoSchedule"}]'
slice5='{"metadata":{"name":"t5"},"spec":{"driver":"xpu.dra.dev","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},"devices":[{"name":"npu-0","taints":'$taints'}]}}'
expect "5 taints exceed the 1.34 limit" 422 "$(kc POST /apis/resource.k8s.io/v1/resourceslices "$slice5")"
expect "422 names the taints" "spec.devices[0].taints" "$(field 'd["details"]["causes"][0]["field"]')"
t=$(curl -sS -o /dev/null -w '%{time_total}' --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes")
python3 -c "import sys; sys.exit(0 if $t >= 0.2 else 1)" && ok "--latency-ms delays requests" \
  || fail "--latency-ms: took $t s"
for n in w1 w2 w3; do kc POST /api/v1/nodes "{\"metadata\":{\"name\":\"$n\"}}" >/dev/null; done
start=$(date +%s)
curl -sN --max-time 20 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
  "$SERVER/api/v1/nodes?watch=1&timeoutSeconds=30" >"$DIR/wclose" 2>/dev/null
expect "--watch-close-after 1 ends the watch after one event" 1 "$(wc -l <"$DIR/wclose" | tr -d ' ')"
[ $(($(date +%s) - start)) -lt 15 ] && ok "the early close is prompt" || fail "early close took long"
kill -TERM "$PID"
until_true 100 bash -c "! kill -0 $PID 2>/dev/null" || fail "second instance stops"
PID=

echo "kubesim smoke: $FAILS failed"
[ "$FAILS" -eq 0 ]
