#!/usr/bin/env bash
# Validates the monitoring files with promtool (Debian: apt-get install -y prometheus):
#   1. deploy/alerts.yml: the alert rules;
#   2. deploy/prometheus.yml: the whole configuration, laid out as the compose file's Prometheus
#      container has it (beside alerts.yml and a metrics-token file, which only exists there);
#   3. deploy/grafana/platform-dashboard.json: every query parses as PromQL (Grafana's
#      $__rate_interval, $__range and $organization replaced by what they expand to).
# That every metric the files name is one the service exposes: test/monitoring.e2e-spec.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
  echo "check-monitoring: promtool is not installed (Debian: apt-get install -y prometheus)" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

promtool check rules deploy/alerts.yml

cp deploy/prometheus.yml deploy/alerts.yml "$tmp/"
printf 'a-token-for-the-check' >"$tmp/metrics-token"
promtool check config "$tmp/prometheus.yml"

# One recording rule per dashboard query: promtool then parses each of them.
node -e '
  const dashboard = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  const expand = (e) => e.replaceAll("$__rate_interval", "1m").replaceAll("$__range", "1h").replaceAll("$organization", ".*");
  const rules = exprs.map(({ expr }, i) => ({ record: `dashboard:query_${i}`, expr: expand(expr) }));
  console.log(JSON.stringify({ groups: [{ name: "dashboard", rules }] }));
' deploy/grafana/platform-dashboard.json >"$tmp/dashboard-queries.yml"
promtool check rules "$tmp/dashboard-queries.yml"
echo "check-monitoring: ok"
