#!/usr/bin/env bash
# Makes the test keys in Fixtures/keys/ with real gpg. None has a passphrase.
# Run it again only to replace the keys; tests and golden files use the
# committed output. Every address is under example.org (RFC 2606).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GNUPGHOME=$(mktemp -d /tmp/mailsec-keys.XXXXXX)
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME"' EXIT
g() { gpg --batch --yes --quiet --passphrase '' --pinentry-mode loopback "$@"; }

# name address primary-algo subkey-algo [expiry] [faked-time]
make() {
    local uid="$1 <$2>" algo=$3 sub=$4 expiry=${5:-never} faked=${6:-}
    local opts=()
    [ -n "$faked" ] && opts=(--faked-system-time "$faked")
    local f
    f=$(g "${opts[@]}" --status-fd 1 --quick-gen-key "$uid" "$algo" cert,sign "$expiry" |
        awk '$2=="KEY_CREATED"{print $4}')
    [ -n "$f" ] || { echo "key generation failed for $uid" >&2; exit 1; }
    [ "$sub" = none ] || g "${opts[@]}" --quick-add-key "$f" "$sub" encr "$expiry"
    echo "$f"
}

export_pub() { gpg --batch --armor --export "$1" > "$here/$2.pub.asc"; }
export_sec() { g --armor --export-secret-keys "$1" > "$here/$2.sec.asc"; export_pub "$1" "$2"; }

alice=$(make Alice alice@example.org ed25519 cv25519)           # the sender
export_sec "$alice" alice
bob=$(make Bob bob@example.org rsa3072 rsa3072)                  # RSA recipient
export_sec "$bob" bob
export_pub "$(make Malice malice@example.org ed25519 cv25519)" malice
export_pub "$(make 'Evil Alice' alice@example.org.evil ed25519 cv25519)" alice-evil
export_pub "$(make Expired expired@example.org ed25519 cv25519 1y 20200101T000000)" expired
export_pub "$(make 'Sign Only' signonly@example.org ed25519 none)" signonly

revoked=$(make Revoked revoked@example.org ed25519 cv25519)
sed 's/^:-----/-----/' "$GNUPGHOME/openpgp-revocs.d/$revoked.rev" | g --import
export_pub "$revoked" revoked

# Two keys for one address: the older one expired, the newer one usable.
carol_old=$(make Carol carol@example.org ed25519 cv25519 1y 20210101T000000)
export_pub "$carol_old" carol-expired
carol_new=$(make Carol carol@example.org ed25519 cv25519 never 20240101T000000)
export_sec "$carol_new" carol

# Two usable keys for one address: the newer one is chosen.
export_pub "$(make Dave dave@example.org rsa2048 rsa2048 never 20220101T000000)" dave-older
export_pub "$(make Dave dave@example.org ed25519 cv25519 never 20250101T000000)" dave-newer

# A key whose user ID has no self-signature: GnuPG lists it as invalid.
invalid=$(make Invalid invalid@example.org ed25519 cv25519)
gpg --batch --export "$invalid" | python3 "$here/strip-uid-selfsig.py" > "$here/invalid.pub.gpg"

ls -l "$here"
