# Sourced by scripts/submission-e2e and scripts/bench: a private mail system on
# loopback under $T (nothing of the system's own Postfix or Dovecot is used or
# touched). Sets up a throwaway CA, a server certificate for "localhost", a
# certificate from another CA, Dovecot's auth service with a passwd-file (user
# alice, password $password), and a private Postfix with submission services:
#   $port_starttls  STARTTLS required, AUTH (587's role)
#   $port_tls       implicit TLS, AUTH (465's role)
#   $port_otherca   STARTTLS with a certificate from another CA
#   $port_notls     no STARTTLS offered at all
#   $port_wrongname as $port_starttls, for a client that asks for another host name
# Delivery into Maildirs under $T/mail/example.org/NAME/. Every smtpd logs its
# dialogue (debug_peer_list) into $T/maillog under its own syslog name.
# XOAUTH2: Dovecot's oauth2 passdb asks scripts/lib/introspect.py (127.0.0.1:$port_oauth)
# about the token; the one in $T/oauth/token (= $oauth_token) is alice's, any other is
# refused; every token asked about is appended to $T/oauth/asked.
# The server certificate also names submission.e2e.test (for a client in a network
# namespace: mailsystem_listen adds a submission service on another address).
# Needs: T, root (Postfix's master runs as root). Call mailsystem_start/_stop.

source "$(dirname "${BASH_SOURCE[0]}")/e2e.sh"   # free_port, check, wait_for (a caller may define its own after)
port_starttls=$(free_port); port_tls=$(free_port); port_otherca=$(free_port); port_notls=$(free_port); port_wrongname=$(free_port)
password=e2e-$RANDOM$RANDOM
port_oauth=$(free_port)
oauth_token=ya29.e2e-$RANDOM$RANDOM$RANDOM
conf=$T/postfix

mailsystem_setup() {
    # Postfix's virtual delivery refuses root: the Maildirs belong to a system user of ours.
    local user=mailsec-mail
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
    mail_uid=$(id -u "$user"); mail_gid=$(id -g "$user")
    mkdir -p "$T/tls" "$T/mail" "$T/queue" "$T/pfdata" "$T/dovecot/run" "$T/dovecot/state" "$conf"
    # --- certificates: our CA and its server certificate; another CA and its ---
    for ca in ca other; do
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mailsec e2e $ca" \
            -keyout "$T/tls/$ca.key" -out "$T/tls/$ca.crt" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$T/tls/$ca-server.key" \
            -out "$T/tls/$ca-server.csr" 2>/dev/null
        printf 'subjectAltName=DNS:localhost,DNS:submission.e2e.test\nextendedKeyUsage=serverAuth\n' > "$T/tls/ext"
        openssl x509 -req -in "$T/tls/$ca-server.csr" -CA "$T/tls/$ca.crt" -CAkey "$T/tls/$ca.key" -CAcreateserial \
            -days 2 -extfile "$T/tls/ext" -out "$T/tls/$ca-server.crt" 2>/dev/null
    done
    chmod 600 "$T"/tls/*.key

    # --- Dovecot: only its auth service, for Postfix's SASL -----------------------
    echo "alice@example.org:{PLAIN}$password" > "$T/dovecot/passwd"
    chmod 644 "$T/dovecot/passwd"
    cat > "$T/dovecot/dovecot.conf" <<EOF
base_dir = $T/dovecot/run
state_dir = $T/dovecot/state
log_path = $T/dovecot/log
protocols =
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login xoauth2
passdb {
  driver = oauth2
  mechanisms = xoauth2
  args = $T/dovecot/oauth2.conf.ext
}
passdb {
  driver = passwd-file
  mechanisms = plain login
  args = scheme=PLAIN username_format=%u $T/dovecot/passwd
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=/nonexistent
}
service auth {
  unix_listener $T/dovecot/auth {
    mode = 0666
  }
}
service anvil {
  chroot =
}
EOF
    mkdir -p "$T/oauth"
    printf '%s\n' "$oauth_token" > "$T/oauth/token"
    cat > "$T/dovecot/oauth2.conf.ext" <<EOF
introspection_mode = post
introspection_url = http://127.0.0.1:$port_oauth/introspect
force_introspection = yes
username_attribute = username
active_attribute = active
active_value = true
EOF

    # --- Postfix --------------------------------------------------------------------
    cp /etc/postfix/master.cf "$conf/master.cf"
    sed -i '/^smtp      inet/d' "$conf/master.cf"
    submission_opts="-o smtpd_sasl_auth_enable=yes -o smtpd_tls_auth_only=yes -o smtpd_client_restrictions=
  -o smtpd_recipient_restrictions=check_recipient_access,texthash:$conf/refused,permit_sasl_authenticated,reject"
    cat >> "$conf/master.cf" <<EOF
127.0.0.1:$port_starttls inet n - n - - smtpd
  -o syslog_name=postfix/starttls -o smtpd_tls_security_level=encrypt $submission_opts
127.0.0.1:$port_tls inet n - n - - smtpd
  -o syslog_name=postfix/tls -o smtpd_tls_wrappermode=yes -o smtpd_tls_security_level=encrypt $submission_opts
127.0.0.1:$port_wrongname inet n - n - - smtpd
  -o syslog_name=postfix/wrongname -o smtpd_tls_security_level=encrypt $submission_opts
127.0.0.1:$port_otherca inet n - n - - smtpd
  -o syslog_name=postfix/otherca -o smtpd_tls_security_level=encrypt
  -o smtpd_tls_cert_file=$T/tls/other-server.crt -o smtpd_tls_key_file=$T/tls/other-server.key $submission_opts
127.0.0.1:$port_notls inet n - n - - smtpd
  -o syslog_name=postfix/notls -o smtpd_tls_security_level=none -o smtpd_sasl_auth_enable=yes -o smtpd_tls_auth_only=no
  -o smtpd_client_restrictions= -o smtpd_recipient_restrictions=permit_sasl_authenticated,reject
EOF
    echo "refused@example.org 550 5.1.1 no such user here" > "$conf/refused"
    for name in alice bob carol dave nobody refused; do echo "$name@example.org example.org/$name/"; done > "$conf/mailboxes"
    cat > "$conf/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $T/queue
data_directory = $T/pfdata
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = localhost
mydomain = example.test
myorigin = example.test
mydestination =
mynetworks = 127.0.0.0/8
virtual_mailbox_domains = example.org
virtual_mailbox_base = $T/mail
virtual_mailbox_maps = texthash:$conf/mailboxes
virtual_uid_maps = static:$mail_uid
virtual_gid_maps = static:$mail_gid
maillog_file = $T/maillog
maillog_file_prefixes = $T
smtputf8_enable = no
smtpd_tls_cert_file = $T/tls/ca-server.crt
smtpd_tls_key_file = $T/tls/ca-server.key
smtpd_sasl_type = dovecot
smtpd_sasl_path = $T/dovecot/auth
EOF
    # The e2e reads each smtpd's dialogue in the log; the bench leaves it out (MAILSYSTEM_QUIET=1).
    [ "${MAILSYSTEM_QUIET:-}" = 1 ] || printf 'debug_peer_list = 127.0.0.1\ndebug_peer_level = 1\n' >> "$conf/main.cf"
    postconf -c "$conf" -F '*/*/chroot = n' >/dev/null
    chown postfix "$T/pfdata"
    chown "$mail_uid:$mail_gid" "$T/mail"
    postfix -c "$conf" check || { echo "mailsystem: the private Postfix does not pass its check"; return 1; }
}

mailsystem_start() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/introspect.py" "$port_oauth" "$T/oauth/token" alice@example.org \
        "$T/oauth/asked" >/dev/null 2>&1 &
    introspect_pid=$!
    dovecot -c "$T/dovecot/dovecot.conf" || { echo "mailsystem: Dovecot did not start"; cat "$T/dovecot/log"; return 1; }
    postfix -c "$conf" start >/dev/null 2>&1 || { echo "mailsystem: Postfix did not start"; tail -5 "$T/maillog"; return 1; }
    for _ in $(seq 1 50); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port_starttls), 1)" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "mailsystem: submission does not answer"; return 1
}

postfix_stop() { postfix -c "$conf" stop >/dev/null 2>&1; for _ in $(seq 1 50); do postfix -c "$conf" status >/dev/null 2>&1 || return 0; sleep 0.1; done; }
postfix_start() { postfix -c "$conf" start >/dev/null 2>&1; }

# mailsystem_listen ADDRESS PORT NAME: one more STARTTLS submission service (as
# $port_starttls) on ADDRESS:PORT, logging as postfix/NAME; Postfix reloads.
mailsystem_listen() {
    printf '%s:%s inet n - n - - smtpd\n  -o syslog_name=postfix/%s -o smtpd_tls_security_level=encrypt %s\n' \
        "$1" "$2" "$3" "$submission_opts" >> "$conf/master.cf"
    postfix -c "$conf" reload >/dev/null 2>&1
}

mailsystem_stop() {
    [ -n "${introspect_pid:-}" ] && kill "$introspect_pid" 2>/dev/null
    postfix -c "$conf" abort >/dev/null 2>&1 || true
    [ -f "$T/dovecot/run/master.pid" ] && kill "$(cat "$T/dovecot/run/master.pid")" 2>/dev/null || true
}
