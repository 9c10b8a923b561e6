#!/bin/sh
# Makes throwaway certificates for the tls:// tests in DIR (never committed: generated at build
# time). Every certificate names 127.0.0.1 (IP subjectAltName) and localhost, and has no
# extended key usage, so it serves as a server's and as a client's.
#   ca.pem                       the test CA
#   node.pem node.key            signed by it, valid for ten years
#   expired.pem expired.key      signed by it, valid only during 2020
#   other-ca.pem                 another CA
#   stranger.pem stranger.key    signed by the other CA
#   self.pem self.key            self-signed
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
san="subjectAltName=IP:127.0.0.1,DNS:localhost"
new_ca() {  # NAME
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=taskwire test $1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
new_key_and_request() {  # NAME
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=$1 127.0.0.1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
}
sign() {  # NAME CA
  printf '%s\n' "$san" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 3650 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
new_ca ca
new_ca other-ca
new_key_and_request node && sign node ca
new_key_and_request stranger && sign stranger other-ca
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
  -subj "/CN=self 127.0.0.1" -addext "$san" -keyout self.key -out self.pem 2>/dev/null

# An expired one: `openssl ca` is the tool that takes a start and end date in the past.
mkdir -p expired-ca.d
: > expired-ca.d/index.txt
cat > expired-ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = expired-ca.d
database = expired-ca.d/index.txt
new_certs_dir = expired-ca.d
serial = expired-ca.d/serial
certificate = ca.pem
private_key = ca.key
default_md = sha256
policy = anything
copy_extensions = none
x509_extensions = ext
[anything]
commonName = supplied
[ext]
$san
CNF
echo 01 > expired-ca.d/serial
new_key_and_request expired
openssl ca -batch -config expired-ca.cnf -startdate 20200101000000Z -enddate 20201231000000Z \
  -in expired.csr -out expired.pem 2>/dev/null
rm -f ./*.csr ./*.ext
echo "made test certificates in $dir"
