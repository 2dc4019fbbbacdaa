#!/usr/bin/env bash
# Lists the test files of one tier (mirrors the include globs in vitest.config.ts).
cd "$(dirname "$0")/.."
case $1 in
  unit) find contracts aggregates platform streams services cli k8s bench proof test/unit -name '*.unit.test.ts' -not -path '*/node_modules/*' 2>/dev/null; find test/unit -name '*.test.ts' 2>/dev/null ;;
  *) find "test/$1" -name "*.$1.test.ts" 2>/dev/null ;;
esac
