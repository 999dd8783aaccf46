# Sourced by the end-to-end scripts (scripts/postfix-e2e, scripts/submission-e2e,
# scripts/cluster-e2e) and scripts/lib/mailsystem.sh: the helpers they all use.
# The caller sets passed=0 failed=0 before its first check.

# free_port: a TCP port nothing listens on now (127.0.0.1).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# check "what" command...: one "ok:" or "FAIL:" line, counted in passed/failed.
check() {
    local what=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok:   $what"
    else failed=$((failed + 1)); echo "FAIL: $what"; fi
}

# wait_for 'CONDITION': evaluated anew every half second, up to 60 s (WAIT=seconds for longer).
wait_for() { for _ in $(seq 1 $(( ${WAIT:-60} * 2 ))); do eval "$1" && return 0; sleep 0.5; done; return 1; }

# throwaway_key HOME ADDRESS NAME OUT: a new key pair (ed25519, cv25519 for encryption,
# no passphrase) for ADDRESS in the new GnuPG home HOME; its public key to OUT.pub.asc
# and its revocation certificate to OUT.rev.asc (both 0644).
throwaway_key() {
    local home=$1 address=$2 name=$3 out=$4 fpr
    mkdir -m 700 "$home"
    GNUPGHOME=$home gpg --batch --quiet --passphrase '' --quick-gen-key "$name <$address>" ed25519 default never 2>/dev/null
    fpr=$(GNUPGHOME=$home gpg --with-colons --list-keys "$address" 2>/dev/null | awk -F: '$1=="fpr"{print $10; exit}')
    GNUPGHOME=$home gpg --batch --quiet --passphrase '' --quick-add-key "$fpr" cv25519 encr never 2>/dev/null
    GNUPGHOME=$home gpg --batch --armor --export "$address" > "$out.pub.asc" 2>/dev/null
    sed 's/^:-----BEGIN/-----BEGIN/' "$home"/openpgp-revocs.d/*.rev > "$out.rev.asc"
    chmod 644 "$out.pub.asc" "$out.rev.asc"
}
