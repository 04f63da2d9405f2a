#!/usr/bin/env bash
# Certificates for Silo over TLS on a test machine: a CA, and one node certificate it signs.
#
#   tls-certs.sh [-v] OUTDIR [NAME...]
#
# OUTDIR/ca.pem, ca-key.pem      the CA: EC P-256, 10 years, CN "Silo local CA". Made once:
#                                kept and reused while both files exist.
# OUTDIR/node.pem, node-key.pem  the node certificate (the leaf only, no chain), issued anew
#                                on every run: EC P-256, 825 days, extendedKeyUsage serverAuth
#                                and clientAuth (nodes present it to each other), subject
#                                alternative names DNS:localhost, IP:127.0.0.1, IP:::1 and
#                                each NAME (an IPv4 or IPv6 address as IP:, anything else as DNS:).
#
# Keys are written mode 0600, certificates 0644. Trust the CA with --ca-bundle (silo),
# SILO_CA_BUNDLE (silo, the Python client) or AWS_CA_BUNDLE (aws-cli, boto3). Prints nothing
# but errors unless -v. Needs the openssl command (1.1.1 or later; Debian 12 ships 3.0).
set -euo pipefail

die() { echo "tls-certs.sh: $*" >&2; exit 1; }
usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

verbose=0 out="" names=()
while [ $# -gt 0 ]; do
  case "$1" in
    -v) verbose=1; shift;;
    -h|--help) usage 0;;
    --) shift; break;;
    -*) die "unknown option $1 (see --help)";;
    *) if [ -z "$out" ]; then out=$1; else names+=("$1"); fi; shift;;
  esac
done
for arg in "$@"; do if [ -z "$out" ]; then out=$arg; else names+=("$arg"); fi; done
[ -n "$out" ] || usage 2
say() { if [ "$verbose" = 1 ]; then echo "$*"; fi; }
command -v openssl >/dev/null || die "needs the openssl command (Debian package openssl)"

# The subject alternative names: the loopback names first, then NAMEs, each once.
ipv4='^([0-9]{1,3}\.){3}[0-9]{1,3}$'
sans=(DNS:localhost IP:127.0.0.1 IP:::1)
for name in "${names[@]}"; do
  if [[ $name =~ $ipv4 ]]; then
    IFS=. read -r a b c d <<<"$name"
    for octet in "$a" "$b" "$c" "$d"; do [ $((10#$octet)) -le 255 ] || die "'$name' is not an IPv4 address"; done
    san="IP:$name"
  elif [[ $name == *:* ]]; then
    [[ $name =~ ^[0-9A-Fa-f:.]+$ ]] || die "'$name' is not an IPv6 address (a NAME with ':' must be one)"
    san="IP:$name"
  elif [[ $name =~ ^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$ ]] && [ ${#name} -le 253 ]; then
    san="DNS:${name%.}"
  else
    die "'$name' is neither an IP address nor a DNS name (letters, digits, '-' and '.', optionally '*.' first)"
  fi
  seen=0; for s in "${sans[@]}"; do [ "$s" = "$san" ] && seen=1; done
  [ $seen = 1 ] || sans+=("$san")
done

mkdir -p -- "$out" 2>/dev/null || die "cannot create the directory $out"
[ -w "$out" ] || die "cannot write to $out"
tmp=$(mktemp -d "$out/.tls-certs.XXXXXX") || die "cannot create a temporary directory in $out"
trap 'rm -rf -- "$tmp"' EXIT
umask 077

# Runs openssl quietly; on failure prints what it was doing and openssl's own words.
ossl() {  # what args...
  local what=$1; shift
  if ! openssl "$@" >"$tmp/openssl.log" 2>&1; then
    echo "tls-certs.sh: openssl failed to $what:" >&2
    sed 's/^/  /' "$tmp/openssl.log" >&2
    exit 1
  fi
}
new_key() { ossl "generate an EC P-256 key" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
serial() { echo "0x$(openssl rand -hex 16)"; }

# Extensions, from files of their own (not the system's openssl.cnf), so that every
# OpenSSL from 1.1.1 on makes the same certificates.
cat >"$tmp/ext.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[node]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = $(IFS=,; echo "${sans[*]}")
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

ca=$out/ca.pem ca_key=$out/ca-key.pem
if [ -e "$ca" ] && [ -e "$ca_key" ]; then
  # Reused: it must still be a CA whose key is the one beside it.
  [ -r "$ca" ] && [ -r "$ca_key" ] || die "cannot read $ca or $ca_key"
  openssl x509 -in "$ca" -noout -pubkey >"$tmp/ca.pub" 2>/dev/null || die "$ca is not a PEM certificate (remove $ca and $ca_key to make a new CA)"
  openssl pkey -in "$ca_key" -pubout >"$tmp/ca-key.pub" 2>/dev/null || die "$ca_key is not an unencrypted PEM private key (remove $ca and $ca_key to make a new CA)"
  cmp -s "$tmp/ca.pub" "$tmp/ca-key.pub" || die "$ca_key is not the key of $ca (remove both to make a new CA)"
  openssl x509 -in "$ca" -noout -checkend 86400 >/dev/null 2>&1 || die "the CA $ca expires within a day (remove $ca and $ca_key to make a new one; clients must then trust the new one)"
  say "reused the CA $ca"
elif [ -e "$ca" ] || [ -e "$ca_key" ]; then
  die "$out holds only one of ca.pem and ca-key.pem: restore the other, or remove it to make a new CA"
else
  new_key "$tmp/ca-key.pem"
  ossl "make the CA certificate" req -new -x509 -config "$tmp/ext.cnf" -extensions ca -key "$tmp/ca-key.pem" \
    -subj "/CN=Silo local CA" -days 3650 -sha256 -set_serial "$(serial)" -out "$tmp/ca.pem"
  chmod 600 "$tmp/ca-key.pem"; chmod 644 "$tmp/ca.pem"
  # The key first: a crash in between leaves a key without a certificate, which the next
  # run refuses rather than silently making a second CA.
  mv -f "$tmp/ca-key.pem" "$ca_key"; mv -f "$tmp/ca.pem" "$ca"
  say "made the CA $ca (key $ca_key)"
fi

new_key "$tmp/node-key.pem"
ossl "make the node's certificate request" req -new -config "$tmp/ext.cnf" -key "$tmp/node-key.pem" \
  -subj "/CN=Silo node" -out "$tmp/node.csr"
ossl "sign the node certificate with $ca" x509 -req -in "$tmp/node.csr" -CA "$ca" -CAkey "$ca_key" \
  -set_serial "$(serial)" -days 825 -sha256 -extfile "$tmp/ext.cnf" -extensions node -out "$tmp/node.pem"
ossl "verify the new node certificate against $ca" verify -CAfile "$ca" -purpose sslserver "$tmp/node.pem"
chmod 600 "$tmp/node-key.pem"; chmod 644 "$tmp/node.pem"
mv -f "$tmp/node-key.pem" "$out/node-key.pem"; mv -f "$tmp/node.pem" "$out/node.pem"
say "issued $out/node.pem (key $out/node-key.pem) for $(IFS=,; echo "${sans[*]}"), valid 825 days"
