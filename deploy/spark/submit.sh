#!/usr/bin/env bash
# Submit xgate's Spark runner to a cluster (or local[*]) with spark-submit.
#
#   deploy/spark/submit.sh [spark-submit options] -- [xgate spark options]
#   deploy/spark/submit.sh --master spark://head:7077 -- --config /etc/xgate --checkpoint hdfs:///xgate/ckpt
#
# It zips gateway/ and protocol_adapters/ for the executors (--py-files), adds Spark's own
# Kafka connector (--packages), and runs deploy/spark/xgate_spark.py. The executors also
# need xgate's dependencies (pip install 'xgate[spark]' in their image, or a packed
# environment, below).
#
# Environment:
#   XGATE_SPARK_PACKAGES  --packages coordinates (default: the Kafka connector of the installed
#                         pyspark, org.apache.spark:spark-sql-kafka-0-10_2.13:<version>; empty: none)
#   XGATE_SPARK_ARCHIVE   a packed Python environment (venv-pack or conda-pack .tar.gz) holding
#                         xgate[spark]: shipped with --archives, executors run its python
#   XGATE_REQUIRE_CORE    1 (default): an executor whose Python cannot import the native core
#                         (xgate_core) fails its task, naming that Python; 0: it judges in Python
#   SPARK_SUBMIT          the spark-submit to run (default: spark-submit on PATH)
#   PYTHON                the Python that has pyspark, to find its version (default: python3)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}

spark_args=()
app_args=()
after_separator=0
for arg in "$@"; do
    if [ "$after_separator" = 0 ] && [ "$arg" = "--" ]; then
        after_separator=1
    elif [ "$after_separator" = 0 ]; then
        spark_args+=("$arg")
    else
        app_args+=("$arg")
    fi
done

if [ -z "${XGATE_SPARK_PACKAGES+set}" ]; then
    version=$("$python" -c 'import pyspark; print(pyspark.__version__)')
    XGATE_SPARK_PACKAGES="org.apache.spark:spark-sql-kafka-0-10_2.13:$version"
fi
if [ -n "$XGATE_SPARK_PACKAGES" ]; then
    spark_args+=(--packages "$XGATE_SPARK_PACKAGES")
fi
spark_args+=(--conf "spark.executorEnv.XGATE_REQUIRE_CORE=${XGATE_REQUIRE_CORE:-1}")
if [ -n "${XGATE_SPARK_ARCHIVE:-}" ]; then
    spark_args+=(--archives "$XGATE_SPARK_ARCHIVE#xgate-env" --conf spark.pyspark.python=./xgate-env/bin/python)
fi

# the project's two packages, as the executors import them; written beside and renamed into place, so that
# another submit from this checkout that is still reading the zip never sees it half written or gone
mkdir -p "$repo/build"
zipfile="$repo/build/xgate-spark.zip"
partial="$zipfile.$$.partial"
trap 'rm -f "$partial"' EXIT
(cd "$repo" && "$python" - "$partial" <<'PY'
import pathlib, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    for package in ("gateway", "protocol_adapters"):
        for path in sorted(pathlib.Path(package).rglob("*.py")):
            archive.write(path)
PY
)
mv -f "$partial" "$zipfile"
trap - EXIT

exec "${SPARK_SUBMIT:-spark-submit}" --name xgate --py-files "$zipfile" "${spark_args[@]}" \
    "$here/xgate_spark.py" "${app_args[@]}"
