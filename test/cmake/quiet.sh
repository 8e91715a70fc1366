# Sourced by the packaging tests of this folder.
quiet() {  # runs a command, printing its output only when it fails
    local out
    if ! out=$("$@" 2>&1); then
        printf 'failed: %s\n%s\n' "$*" "$out" >&2
        return 1
    fi
}
