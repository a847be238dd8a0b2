#!/usr/bin/env bash
# The README's walkthrough, as a script: sign in, install the transform plugin, create and
# execute an agent, create and run a workflow, read its runs, and add a webhook when the tier
# has them. It works offline against a fresh `npm start`:
#
#   ADMIN_PASSWORD='a-long-password-of-yours' npm start      # in one terminal
#   ADMIN_PASSWORD='a-long-password-of-yours' bash examples/walkthrough.sh
#
# PLATFORM_URL (default http://127.0.0.1:3000), ADMIN_EMAIL (default admin@platform.local),
# ADMIN_PASSWORD (required: the one the service started with, or the generated one its log
# shows) and WEBHOOK_URL (optional, a receiver of yours) come from the environment. It needs
# bash, curl and node (the one that runs npm), no jq.
#
# Each block between "# >>> <name>" and "# <<<" appears verbatim in README.md, in a ```bash
# block under "<!-- walkthrough:<name> -->"; test/walkthrough.e2e-spec.ts fails when they
# differ, and runs this script against the service started as `npm start` does.
set -euo pipefail
cd "$(mktemp -d)"

# >>> setup
PLATFORM_URL="${PLATFORM_URL:-http://127.0.0.1:3000}"
ADMIN_EMAIL="${ADMIN_EMAIL:-admin@platform.local}"
: "${ADMIN_PASSWORD:?set ADMIN_PASSWORD to the admin password (the one npm start logged, or chose)}"
# json [PATH...]: prints the JSON on stdin, or the field at each PATH (like `jq -r .PATH`);
# fails, showing the JSON, when a field is missing
json() {
  node -e '
    let text = "";
    process.stdin.on("data", (chunk) => (text += chunk)).on("end", () => {
      const doc = JSON.parse(text);
      const paths = process.argv.slice(1);
      for (const path of paths.length ? paths : [""]) {
        const value = path.split(".").filter(Boolean).reduce((v, key) => (v == null ? undefined : v[key]), doc);
        if (value === undefined) { console.error(`no ${path} in ${text}`); process.exit(1); }
        console.log(typeof value === "string" ? value : JSON.stringify(value));
      }
    });' "$@"
}
# <<<

# >>> sign-in
curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/auth/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$ADMIN_EMAIL\",\"password\":\"$ADMIN_PASSWORD\"}" > tokens.json
# {"accessToken":"eyJ...","tokenType":"Bearer","expiresIn":900,"refreshToken":"rt_..."}
TOKEN=$(json accessToken < tokens.json)
curl -sS --fail-with-body "$PLATFORM_URL/api/auth/me" -H "Authorization: Bearer $TOKEN" | json user.email organization.tier
# admin@platform.local
# starter
# <<<

# >>> install-plugin
curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/plugins/transform/install" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{}' | json slug agentKinds.0.kind installedAt
# transform
# transform.jsonata
# 2026-...
# <<<

# >>> agent
AGENT=$(curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/agents" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' \
  -d '{"name":"shout","kind":"transform.jsonata","config":{"expression":"$uppercase(text)"}}' | json id)
curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/agents/$AGENT/execute?wait=30" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -H 'Idempotency-Key: order-42' -d '{"input":{"text":"hi"}}' | json
# {"id":"...","agentId":"...","status":"succeeded","input":{"text":"hi"},"output":"HI","error":null,
#  "attempts":1,"createdAt":"...","startedAt":"...","finishedAt":"...","durationMs":2,
#  "triggeredBy":{"type":"user","id":"..."}}
# <<<

# >>> workflow
WORKFLOW=$(curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/workflows" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d @- <<EOF | json id
{
  "name": "greet",
  "inputSchema": { "type": "object", "required": ["name"] },
  "steps": [
    { "id": "shout", "agent": "$AGENT", "input": "{ 'text': 'hello ' & input.name }" },
    { "id": "punctuate", "action": "transform.jsonata", "with": { "expression": "greeting & '!'" },
      "needs": ["shout"], "input": "{ 'greeting': steps.shout.output }" }
  ],
  "output": "{ 'message': steps.punctuate.output }"
}
EOF
)
curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/workflows/$WORKFLOW/run?wait=30" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{"input":{"name":"Ada"}}' > run.json
RUN=$(json id < run.json)
json status output < run.json
# succeeded
# {"message":"HELLO ADA!"}
# <<<

# >>> runs
curl -sS --fail-with-body "$PLATFORM_URL/api/workflows/$WORKFLOW/runs?limit=10" -H "Authorization: Bearer $TOKEN" | json
# {"data":[{"id":"...","workflowId":"...","workflowVersion":1,"status":"succeeded",...}],"nextCursor":null}
curl -sS --fail-with-body "$PLATFORM_URL/api/workflows/$WORKFLOW/runs/$RUN" -H "Authorization: Bearer $TOKEN" | json steps
# [{"id":"shout","status":"succeeded","attempts":1,...},{"id":"punctuate","status":"succeeded",...}]
# <<<

# >>> webhook
curl -sS --fail-with-body "$PLATFORM_URL/api/subscription" -H "Authorization: Bearer $TOKEN" > subscription.json
if [[ "$(json features < subscription.json)" != *'"webhooks"'* ]]; then
  echo "The $(json tier < subscription.json) tier has no webhooks (Team and Enterprise do): skipping"
elif [ -z "${WEBHOOK_URL:-}" ]; then
  echo "Set WEBHOOK_URL to a receiver of yours (https://...) to add a webhook: skipping"
else
  curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/webhooks" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d "{\"url\":\"$WEBHOOK_URL\",\"eventTypes\":[\"workflow.run.*\",\"agent.execution.failed\"]}" > webhook.json
  WEBHOOK=$(json id < webhook.json)
  json secret < webhook.json   # whsec_...: shown this once, to verify the signatures
  curl -sS --fail-with-body -X POST "$PLATFORM_URL/api/webhooks/$WEBHOOK/test" -H "Authorization: Bearer $TOKEN" | json
fi
# <<<

echo "walkthrough done"
