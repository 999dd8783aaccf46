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
# Needs: T, root (Postfix's master runs as root). Call mailsystem_start/_stop.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port_starttls=$(free_port); port_tls=$(free_port); port_otherca=$(free_port); port_notls=$(free_port); port_wrongname=$(free_port)
password=e2e-$RANDOM$RANDOM
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
        printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$T/tls/ext"
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
auth_mechanisms = plain login
passdb {
  driver = passwd-file
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

    # --- Postfix --------------------------------------------------------------------
    cp /etc/postfix/master.cf "$conf/master.cf"
    sed -i '/^smtp      inet/d' "$conf/master.cf"
    local common="-o smtpd_sasl_auth_enable=yes -o smtpd_tls_auth_only=yes -o smtpd_client_restrictions=
  -o smtpd_recipient_restrictions=check_recipient_access,texthash:$conf/refused,permit_sasl_authenticated,reject"
    cat >> "$conf/master.cf" <<EOF
127.0.0.1:$port_starttls inet n - n - - smtpd
  -o syslog_name=postfix/starttls -o smtpd_tls_security_level=encrypt $common
127.0.0.1:$port_tls inet n - n - - smtpd
  -o syslog_name=postfix/tls -o smtpd_tls_wrappermode=yes -o smtpd_tls_security_level=encrypt $common
127.0.0.1:$port_wrongname inet n - n - - smtpd
  -o syslog_name=postfix/wrongname -o smtpd_tls_security_level=encrypt $common
127.0.0.1:$port_otherca inet n - n - - smtpd
  -o syslog_name=postfix/otherca -o smtpd_tls_security_level=encrypt
  -o smtpd_tls_cert_file=$T/tls/other-server.crt -o smtpd_tls_key_file=$T/tls/other-server.key $common
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

mailsystem_stop() {
    postfix -c "$conf" abort >/dev/null 2>&1 || true
    [ -f "$T/dovecot/run/master.pid" ] && kill "$(cat "$T/dovecot/run/master.pid")" 2>/dev/null || true
}
