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

"$BIN" --listen 127.0.0.1:0 --kubeconfig-out "$DIR/kubeconfig" --history 8 >"$DIR/log" 2>&1 &
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

kill -TERM "$PID"
if until_true 100 bash -c "! kill -0 $PID 2>/dev/null"; then
  wait "$PID"; rc=$?
  expect "SIGTERM stops it cleanly" 0 "$rc"
else
  fail "SIGTERM stops it within 10 s"
fi
PID=
echo "kubesim smoke: $FAILS failed"
[ "$FAILS" -eq 0 ]
