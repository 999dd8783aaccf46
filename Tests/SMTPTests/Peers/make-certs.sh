#!/bin/sh
# Makes throwaway TLS material in $1 for the SMTP client's tests:
#   ca.pem            a CA the client is told to trust
#   server.pem/.key   for "localhost" and 127.0.0.1, signed by ca.pem
#   other.pem/.key    for "localhost", signed by another CA (untrusted)
#   wrongname.pem/.key  signed by ca.pem, for "mail.elsewhere.test" only
#   expired.pem/.key  signed by ca.pem, valid only in 2020
set -eu
cd "$1"
q() { "$@" >/dev/null 2>&1; }
cat > ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CNF
: > index.txt; echo 01 > serial
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=mailsec test CA"
q openssl req -x509 -newkey rsa:2048 -nodes -keyout otherca.key -out otherca.pem -days 2 -subj "/CN=another CA"
leaf() {  # leaf NAME CA SAN [dates...]
    name=$1 ca=$2 san=$3; shift 3
    q openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=${san#DNS:}" -addext "subjectAltName=$san"
    q openssl ca -batch -config ca.cnf -cert "$ca.pem" -keyfile "$ca.key" -in "$name.csr" -out "$name.pem" -notext "$@"
}
leaf server ca "DNS:localhost,IP:127.0.0.1" -days 2
leaf other otherca "DNS:localhost,IP:127.0.0.1" -days 2
leaf wrongname ca "DNS:mail.elsewhere.test" -days 2
leaf expired ca "DNS:localhost,IP:127.0.0.1" -startdate 20200101000000Z -enddate 20200102000000Z
