# Shared by the CLI test scripts (sourced): counters of passed and failed cases, with $T/out and
# $T/err holding the last command's standard output and error.
passed=0
failed=0

# fail NAME WHY: one failed case, with what the command printed.
fail() {
  echo "FAIL $1: $2"
  echo "  stdout: $(head -c 400 "$T/out" 2>/dev/null)"
  echo "  stderr: $(head -c 400 "$T/err" 2>/dev/null)"
  failed=$((failed + 1))
}
ok() { passed=$((passed + 1)); }
