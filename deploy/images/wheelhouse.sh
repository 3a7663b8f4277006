#!/usr/bin/env bash
# The wheelhouse the onceflow image installs from (`make wheelhouse`): every locked dependency of the
# services as the wheel that fits the image's Python (Debian bookworm's CPython 3.11, glibc 2.36,
# x86_64), plus onceflow's own packages built as wheels. An image build then needs no package index.
#
# 1. uv export: the exact versions and hashes of uv.lock, for onceflow's packages less the demo and
#    the test scaffolding (requirements.txt).
# 2. pip download: those wheels for the image's interpreter and platform, checked against the hashes
#    (the host's own Python does not matter). Only when uv.lock changed.
# 3. PySpark is published as a source distribution only: download it (hash-checked) and build it into
#    a wheel once (uv build), again only when its locked version changes.
# 4. uv build: onceflow's packages as wheels, every time (seconds); the image installs them --no-deps.
set -euo pipefail

cd "$(dirname "$0")/../.."
UV=${UV:-uv}
PYTHON=${PYTHON:-python3}
OUT=.cache/wheelhouse
DEPS=$OUT/deps            # third-party wheels (the image's pip installs them with --require-hashes)
LOCAL=$OUT/local          # PySpark's wheel and onceflow's own (--no-deps)
IMAGE_PYTHON=3.11
EXCLUDED=(onceflow-demo onceflow-testing)

say() { echo "wheelhouse: $*"; }
start=$(date +%s)

packages=()
for pyproject in packages/*/pyproject.toml; do
  name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$pyproject" | head -n 1)
  [[ " ${EXCLUDED[*]} " == *" $name "* ]] || packages+=("$name")
done

# Step 1
mkdir -p "$DEPS" "$LOCAL"
package_args=()
for name in "${packages[@]}"; do package_args+=(--package "$name"); done
$UV export --frozen --no-dev --no-emit-workspace --format requirements.txt --no-header --no-annotate \
  "${package_args[@]}" -o "$OUT/all.txt" >/dev/null
# PySpark has no wheel: it is built in step 3 and installed with the local wheels.
awk '/^pyspark==/ {skip=1; print > "/dev/stderr"; next} skip && /^ / {print > "/dev/stderr"; next} {skip=0; print}' \
  "$OUT/all.txt" >"$OUT/requirements.txt" 2>"$OUT/pyspark.txt"

lock_stamp=$OUT/.lock
if [ -f "$lock_stamp" ] && cmp -s "$OUT/all.txt" "$lock_stamp"; then
  say "third-party wheels ok ($(ls "$DEPS" | wc -l) in $DEPS)"
else
  # Step 2
  platforms=()
  for minor in $(seq 36 -1 5); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
  platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
  rm -rf "$DEPS"; mkdir -p "$DEPS"
  say "downloading the locked wheels for CPython $IMAGE_PYTHON (manylinux x86_64) into $DEPS"
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: --python-version "$IMAGE_PYTHON" --implementation cp \
    --abi cp311 --abi abi3 --abi none "${platforms[@]}" -r "$OUT/requirements.txt" -d "$DEPS"
  cp "$OUT/all.txt" "$lock_stamp"
fi
# Step 3
if [ -s "$OUT/pyspark.txt" ] && ! { cmp -s "$OUT/pyspark.txt" "$OUT/.pyspark" && ls "$LOCAL"/pyspark-*.whl >/dev/null 2>&1; }; then
  rm -f "$LOCAL"/pyspark-*
  sdists=$(mktemp -d)
  say "downloading PySpark's source distribution and building its wheel (once per PySpark version)"
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    --no-binary=:all: -r "$OUT/pyspark.txt" -d "$sdists"
  $UV build --quiet --wheel "$sdists"/pyspark-*.tar.gz -o "$LOCAL"
  rm -rf "$sdists"
  cp "$OUT/pyspark.txt" "$OUT/.pyspark"
fi

# Step 4
rm -f "$LOCAL"/onceflow_*.whl
for name in "${packages[@]}"; do
  $UV build --quiet --wheel --package "$name" -o "$LOCAL"
done
say "ok in $(( $(date +%s) - start ))s: $(ls "$DEPS" | wc -l) locked wheels, $(ls "$LOCAL" | wc -l) local ($(du -sh "$OUT" | cut -f1))"
