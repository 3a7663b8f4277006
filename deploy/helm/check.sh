#!/usr/bin/env bash
# Checks the chart with Helm itself (`make helm-check`; tests/deploy/test_helm.py runs the same with
# assertions per value):
#
# 1. helm lint --strict, with the default values and with each values file of deploy/helm/values/.
# 2. helm template (Kubernetes 1.31) of the same, every manifest decoded strictly into the Kubernetes
#    API types by kubecheck (tools/kubecheck): a misspelt field fails.
# The chart was rendered and checked, never installed: no Kubernetes cluster runs here.
set -euo pipefail

cd "$(dirname "$0")/../.."
HELM=${HELM:-.cache/helm/v3.22.0/helm}
KUBECHECK=${KUBECHECK:-.cache/kubecheck/kubecheck}
KUBE_VERSION=${KUBE_VERSION:-1.31.0}
CHART=deploy/helm/onceflow
# The values every install must give (Secrets the chart refers to but does not create).
REQUIRED=(--set postgresql.existingSecret=onceflow-postgres)

status=0
shopt -s nullglob
for values in "" deploy/helm/values/*.yaml; do
  args=("${REQUIRED[@]}")
  label=default
  if [ -n "$values" ]; then args+=(-f "$values"); label=$values; fi
  # Step 1
  if ! "$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" "${args[@]}" >/tmp/onceflow-helm-lint.$$ 2>&1; then
    echo "helm-check: helm lint --strict failed ($label):"; sed 's/^/  /' /tmp/onceflow-helm-lint.$$; status=1
  fi
  # Step 2
  if "$HELM" template onceflow "$CHART" --kube-version "$KUBE_VERSION" "${args[@]}" >/tmp/onceflow-helm-template.$$ 2>&1; then
    if ! "$KUBECHECK" /tmp/onceflow-helm-template.$$ >/tmp/onceflow-kubecheck.$$; then
      echo "helm-check: manifests that do not decode strictly ($label):"; grep '^FAIL' /tmp/onceflow-kubecheck.$$ | sed 's/^/  /'; status=1
    else
      echo "helm-check: $label: lint --strict ok, $(grep -c '^ok' /tmp/onceflow-kubecheck.$$) manifests decode strictly"
    fi
  else
    echo "helm-check: helm template failed ($label):"; sed 's/^/  /' /tmp/onceflow-helm-template.$$; status=1
  fi
done
rm -f /tmp/onceflow-helm-*.$$ /tmp/onceflow-kubecheck.$$
exit $status
