# Sourced by the tests of configure's refusals (refuse_*_test.sh): after `refuse_init WHAT`,
# $src is the source tree, $work a temporary directory removed on exit, `fail MESSAGE` ends the
# test, and `refused CMAKE-ARGS...` configures the library alone with those arguments, fails the
# test if cmake accepted them and prints cmake's output on one line.
refuse_init() {  # refuse_init WHAT: WHAT names the test in its messages
    refuse_what=$1
    src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
}
fail() {
    echo "refusing $refuse_what: $*" >&2
    exit 1
}
refused() {
    rm -rf "$work/build"
    if cmake -S "$src" -B "$work/build" -G Ninja -DZKLOCK_BUILD_TESTS=OFF -DZKLOCK_BUILD_BENCH=OFF \
        -DZKLOCK_BUILD_EXAMPLES=OFF -DZKLOCK_BUILD_TOOLS=OFF "$@" >"$work/out" 2>&1; then
        cat "$work/out" >&2
        fail "configure accepted it"
    fi
    tr -s ' \n' ' ' <"$work/out"
}
