# Sourced by `scripts/postfix-e2e --daemon`: the resident filter (`mailsec filter
# --listen`) as Postfix's after-queue SMTP content filter (FILTER_README's
# "advanced content filter"), started by the script as the filter user, not by
# Postfix. Postfix's smtp client hands each mail to the daemon; the daemon hands
# its copies to a second smtpd without a content filter, through a relay
# (scripts/lib/smtp-gate.py) that can hold a session so that a kill lands
# certainly during a mail. Then the checks only a resident filter needs.
# Uses the caller's T, conf, user, uid, gid, port_in, port_back, port_daemon,
# port_gate and its helpers (check, send, wait_for, count, mails, has, queue_empty).

daemon_pid=""; gate_pid=""; notify_pid=""

# The master.cf lines of the after-queue set-up (docs/filter.md quotes them, set-up C).
daemon_master_cf() {
    cat <<EOF
127.0.0.1:$port_in inet n - n - - smtpd
  -o content_filter=mailsec:[127.0.0.1]:$port_daemon
  -o receive_override_options=no_address_mappings
mailsec unix - - n - 4 smtp
  -o smtp_send_xforward_command=yes
  -o disable_mime_output_conversion=yes
  -o smtp_generic_maps=
  -o smtp_tls_security_level=none
127.0.0.1:$port_back inet n - n - - smtpd
  -o content_filter=
  -o receive_override_options=no_unknown_recipient_checks,no_header_body_checks,no_milters
  -o smtpd_helo_restrictions=
  -o smtpd_client_restrictions=
  -o smtpd_sender_restrictions=
  -o smtpd_recipient_restrictions=check_recipient_access,texthash:$conf/reinject-access,permit_mynetworks,reject
  -o mynetworks=127.0.0.0/8
  -o smtpd_authorized_xforward_hosts=127.0.0.0/8
EOF
}

# as_filter COMMAND...: run as the filter user, with a clean environment (as systemd would).
as_filter() {
    env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"
}

# daemon_start: starts the daemon and waits for its "listening on" line (a new one).
daemon_start() {
    touch "$T/daemon.log"; local lines; lines=$(wc -l < "$T/daemon.log")
    # A simple command, not as_filter: $! is then the daemon itself (env and setpriv exec it).
    env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 NOTIFY_SOCKET="$T/notify" \
        setpriv --reuid="$uid" --regid="$gid" --clear-groups \
        "$T/bin/mailsec" filter --listen "127.0.0.1:$port_daemon" --config "$T/mailsec.toml" 2>>"$T/daemon.log" &
    daemon_pid=$!
    WAIT=${1:-60} wait_for 'tail -n +$((lines + 1)) "$T/daemon.log" | grep -q "mailsec filter: listening on 127.0.0.1:$port_daemon"' \
        || { echo "postfix-e2e: the daemon did not start listening"; tail -5 "$T/daemon.log"; return 1; }
}

# daemon_kill SIGNAL: signals the daemon and reaps it; its exit status in $daemon_status.
daemon_kill() {
    kill "-$1" "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null; daemon_status=$?
    daemon_pid=""
}

# daemon_reload: SIGHUP, and wait until the daemon has (re)read its configuration.
daemon_reload() {
    local lines; lines=$(wc -l < "$T/daemon.log")
    kill -HUP "$daemon_pid"
    WAIT=10 wait_for 'tail -n +$((lines + 1)) "$T/daemon.log" | grep -q "configuration reloaded"' \
        || echo "postfix-e2e: the daemon did not say it reloaded: $(tail -n +$((lines + 1)) "$T/daemon.log" | tail -1)"
}

# The sd_notify socket, the relay, the daemon; then the first checks of it.
daemon_start_all() {
    python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "ab", buffering=0) as log:
    while True: log.write(s.recv(4096) + b"\n")' "$T/notify" "$T/notify.log" &
    notify_pid=$!
    python3 "$root/scripts/lib/smtp-gate.py" "$port_gate" "$port_back" "$T/gate" > "$T/gate.out" 2>"$T/gate.err" &
    gate_pid=$!
    wait_for 'grep -q listening "$T/gate.out" && test -S "$T/notify"' || { echo "postfix-e2e: the relay did not start"; return 1; }
    check "--check-config accepts the configuration (exit 0)" \
        as_filter "$T/bin/mailsec" filter --listen --check-config --config "$T/mailsec.toml"
    daemon_start || return 1
    check "the daemon says READY=1 to \$NOTIFY_SOCKET once it listens" grep -qx 'READY=1' "$T/notify.log"
}

daemon_cleanup() {
    [ -n "$daemon_pid" ] && kill -9 "$daemon_pid" 2>/dev/null
    [ -n "$gate_pid" ] && kill "$gate_pid" 2>/dev/null
    [ -n "$notify_pid" ] && kill "$notify_pid" 2>/dev/null
    return 0
}

# each_once ID BOX...: every BOX holds exactly one mail with this Message-ID.
each_once() {
    local id=$1 box; shift
    for box in "$@"; do
        [ "$(mails "$box" | xargs -r grep -l -- "^Message-ID: <$id@example.org>" | wc -l)" = 1 ] || return 1
    done
}
arrived() { [ "$(mails "$1" | xargs -r grep -l -- "^Message-ID: <$2@example.org>" | wc -l)" -ge 1 ]; }
to_three() {  # to_three ID: the mixed mail (a letter to Bob, a letter to Carol as Bcc, a postcard) as ID
    printf '%s' "${mixed//e2e.mixed/$1}" | send alice@example.org bob@example.org nobody@example.org carol@example.org
}

daemon_checks() {
    # --- 13. one log line per mail ---------------------------------------------------
    check "one log line per mail on stderr (the mixed mail: one line, sent)" \
        test "$(grep -cE 'message-id=<e2e\.mixed@example\.org>.*status=sent( |$)' "$T/daemon.log")" = 1

    # --- 14. kill -9 during a mail, at three points, then Postfix's retry -------------
    # dot 1: before the first copy's end of data (nothing went out); mail 2: between the
    # first copy and the second; dot 3: the last copy's data sent, its "." held.
    local point n=0
    for point in "dot 1" "mail 2" "dot 3"; do
        n=$((n + 1))
        echo "$point" > "$T/gate"
        to_three "e2e.kill$n" &
        local sender=$!
        WAIT=60 wait_for 'test -f "$T/gate.held"'
        local held=$?
        daemon_kill 9
        rm -f "$T/gate" "$T/gate.held"
        wait "$sender"
        sleep 2
        local out=0 box
        for box in bob carol nobody; do arrived $box "e2e.kill$n" && out=$((out + 1)); done
        check "kill -9 ($point): killed during the mail, $out of 3 copies out, the mail kept by Postfix" \
            test "$held" = 0 -a "$out" = $((n - 1)) -a -n "$(find "$T/queue/deferred" "$T/queue/active" -type f 2>/dev/null)"
        daemon_start || return 1
        postqueue -c "$conf" -f
        WAIT=90 wait_for "arrived bob e2e.kill$n && arrived carol e2e.kill$n && arrived nobody e2e.kill$n && queue_empty"
        sleep 2
        check "... restarted and retried: exactly one copy each for Bob, Carol and the postcard" \
            each_once "e2e.kill$n" bob carol nobody
    done

    # --- 15. kill -9 at random moments under load ---------------------------------------
    python3 - "$port_in" > "$T/burst.out" 2>&1 <<'PY' &
import smtplib, sys, time
port = int(sys.argv[1])
for n in range(40):
    msg = (f"From: Alice <alice@example.org>\r\nTo: bob@example.org, nobody@example.org\r\n"
           f"Subject: burst {n}\r\nMessage-ID: <e2e.burst{n}@example.org>\r\n\r\nmail {n} of a burst\r\n")
    for attempt in range(20):
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=30) as s:
                s.sendmail("alice@example.org", ["bob@example.org", "nobody@example.org"], msg.encode())
            break
        except (OSError, smtplib.SMTPException):
            time.sleep(0.5)
PY
    local burst=$! kills
    for kills in 1 2 3 4; do
        sleep "$(python3 -c 'import random; print(round(random.uniform(0.5, 2.5), 2))')"
        daemon_kill 9
        daemon_start || return 1
    done
    wait "$burst"
    postqueue -c "$conf" -f
    WAIT=180 wait_for 'queue_empty && [ "$(mails bob | xargs -r grep -l "^Message-ID: <e2e.burst" | wc -l)" -ge 40 ] && [ "$(mails nobody | xargs -r grep -l "^Message-ID: <e2e.burst" | wc -l)" -ge 40 ]'
    sleep 2
    # Never lost. Twice only where the relay saw the re-injection smtpd take a copy and
    # the daemon killed before its next command, so before it could record the copy:
    # the window RFC 1047 describes, which no SMTP client can close.
    local n box files copies explained file id bad=0 window=0
    for n in $(seq 0 39); do
        for box in bob nobody; do
            files=$(mails $box | xargs -r grep -l "^Message-ID: <e2e.burst$n@example.org>")
            copies=$(printf '%s' "$files" | grep -c .)
            [ "$copies" = 1 ] && continue
            [ "$copies" = 0 ] && { bad=$((bad + 1)); continue; }
            explained=0
            for file in $files; do
                id=$(grep -m1 -A2 '^Received:' "$file" | grep -o 'with E*SMTP id [0-9A-Za-z]*' | awk '{print $NF}')
                grep -qx "$id" "$T/gate.unconfirmed" 2>/dev/null && explained=$((explained + 1))
            done
            if [ "$explained" -ge $((copies - 1)) ]; then window=$((window + copies - 1)); else bad=$((bad + 1)); fi
        done
    done
    check "40 mails, the daemon killed 4 times at random: none lost, a second copy only in RFC 1047's window ($window such, $bad wrong)" \
        test "$bad" = 0

    # --- 16. keys changed while the daemon runs: taken on the next mail -----------------
    local erin=$T/check-erin
    throwaway_key "$erin" erin@example.org Erin "$T/erin"
    erin_mail() { printf 'From: Alice <alice@example.org>\nTo: erin@example.org\nSubject: for Erin %s\nMessage-ID: <%s@example.org>\n\nsecret for Erin\n' "$1" "$1" \
        | send alice@example.org erin@example.org; }
    erin_mail e2e.erin1
    wait_for 'arrived erin e2e.erin1'
    is_letter() { grep -q '^-----BEGIN PGP MESSAGE-----' "$(mails "$1" | xargs -r grep -l "^Message-ID: <$2@example.org>" | head -1)"; }
    check "Erin without a key gets a postcard" bash -c "! grep -q 'BEGIN PGP MESSAGE' $(mails erin | xargs grep -l e2e.erin1)"
    as_filter gpg --homedir "$T/gnupg" --batch --quiet --import "$T/erin.pub.asc" 2>/dev/null
    erin_mail e2e.erin2
    wait_for 'arrived erin e2e.erin2'
    local letter; letter=$(mails erin | xargs grep -l e2e.erin2)
    check "her key imported while the daemon runs: the next mail is a letter she opens" \
        bash -c "sed -n '/^-----BEGIN PGP MESSAGE-----/,/^-----END PGP MESSAGE-----/p' '$letter' | GNUPGHOME='$erin' gpg --batch --decrypt 2>/dev/null | grep -q 'secret for Erin'"
    as_filter gpg --homedir "$T/gnupg" --batch --quiet --import "$T/erin.rev.asc" 2>/dev/null
    erin_mail e2e.erin3
    wait_for 'grep -q "held for key continuity: erin@example.org" "$T/maillog"'
    sleep 1
    held_erin() { grep -q 'held for key continuity: erin@example.org' "$T/maillog" && ! arrived erin e2e.erin3; }
    check "her key revoked while the daemon runs: the next mail is held (key continuity), no letter to the revoked key" held_erin
    as_filter "$T/bin/mailsec" keys forget --config "$T/mailsec.toml" erin@example.org >/dev/null
    postqueue -c "$conf" -f
    wait_for 'arrived erin e2e.erin3'
    postcard_erin() { each_once e2e.erin3 erin && ! is_letter erin e2e.erin3; }
    check "... released with 'keys forget': a postcard, once" postcard_erin
    gpgconf --homedir "$erin" --kill all >/dev/null 2>&1

    # --- 17. SIGHUP with a broken configuration keeps the old one -----------------------
    cp -p "$T/mailsec.toml" "$T/mailsec.toml.good"
    sed -i '1i mode = "no-such-mode"' "$T/mailsec.toml"
    as_filter "$T/bin/mailsec" filter --listen --check-config --config "$T/mailsec.toml" > "$T/check.out" 2>&1
    local status=$?
    check "--check-config on a broken configuration: exit 78 (EX_CONFIG), one line naming it" \
        bash -c "test $status = 78 && test \$(wc -l < '$T/check.out') = 1 && grep -q mode '$T/check.out'"
    local lines; lines=$(wc -l < "$T/daemon.log")
    kill -HUP "$daemon_pid"
    sleep 2
    one_line() { kill -0 "$daemon_pid" && [ "$(tail -n +$((lines + 1)) "$T/daemon.log" | wc -l)" = 1 ] \
        && tail -n +$((lines + 1)) "$T/daemon.log" | grep -q 'mode' && ! grep -q 'configuration reloaded' <(tail -n +$((lines + 1)) "$T/daemon.log"); }
    check "SIGHUP with a broken configuration: one line naming the problem, the daemon goes on" one_line
    to_three e2e.hup
    WAIT=60 wait_for 'arrived bob e2e.hup && arrived carol e2e.hup && arrived nobody e2e.hup'
    old_config() { each_once e2e.hup bob carol nobody && is_letter bob e2e.hup; }
    check "... and the next mail is filtered with the old configuration" old_config
    cp -p "$T/mailsec.toml.good" "$T/mailsec.toml"
    daemon_reload

    # --- 18. SIGTERM drains: no new connections, the mail in progress finished, exit 0 ---
    echo "dot 2" > "$T/gate"
    to_three e2e.term &
    local sender=$!
    WAIT=60 wait_for 'test -f "$T/gate.held"'
    kill -TERM "$daemon_pid"
    sleep 1
    check "SIGTERM: the daemon stops accepting while a mail is in progress" \
        bash -c "kill -0 $daemon_pid && ! python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $port_daemon), 2)' 2>/dev/null"
    rm -f "$T/gate" "$T/gate.held"
    wait "$sender"
    local i; for i in $(seq 1 60); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.5; done
    wait "$daemon_pid"; daemon_status=$?; daemon_pid=""
    check "... finishes it and exits 0" test "$daemon_status" = 0
    WAIT=30 wait_for 'queue_empty && arrived nobody e2e.term'
    drained() { each_once e2e.term bob carol nobody && queue_empty; }
    check "... the mail was answered 250: one copy each, nothing left in the queue" drained
}
