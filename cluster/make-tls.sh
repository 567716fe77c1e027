#!/usr/bin/env bash
# Create a private CA and one certificate signed by it, for a Dask cluster with TLS.
#
# Usage: cluster/make-tls.sh DIR [HOST...]
#   Writes DIR/ca.pem, DIR/cert.pem, DIR/key.pem (mode 600) unless they exist.
#   HOSTs (names or IP addresses, default: localhost 127.0.0.1) go into the
#   certificate's subjectAltName.  Scheduler, workers and clients all use the same
#   three files: each presents cert.pem and trusts only certificates from ca.pem.
#   For production, use certificates from your site's CA instead.
set -euo pipefail
dir=${1:?usage: make-tls.sh DIR [HOST...]}; shift || true
hosts=("$@"); [ ${#hosts[@]} -gt 0 ] || hosts=(localhost 127.0.0.1)
mkdir -p "$dir"
if [ -s "$dir/ca.pem" ] && [ -s "$dir/cert.pem" ] && [ -s "$dir/key.pem" ]; then
  echo "TLS files already in $dir"; exit 0
fi
umask 077
san=""
for h in "${hosts[@]}"; do
  if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then san+="IP:$h,"; else san+="DNS:$h,"; fi
done
san=${san%,}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
openssl req -x509 -newkey rsa:3072 -nodes -days 365 -subj "/CN=mgapsp dask CA" \
  -keyout "$tmp/ca-key.pem" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey rsa:3072 -nodes -subj "/CN=${hosts[0]}" \
  -keyout "$dir/key.pem" -out "$tmp/req.pem" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" > "$tmp/ext"
openssl x509 -req -in "$tmp/req.pem" -CA "$dir/ca.pem" -CAkey "$tmp/ca-key.pem" \
  -CAcreateserial -days 365 -extfile "$tmp/ext" -out "$dir/cert.pem" 2>/dev/null
chmod 600 "$dir/key.pem"; chmod 644 "$dir/ca.pem" "$dir/cert.pem"
echo "wrote $dir/ca.pem, $dir/cert.pem, $dir/key.pem for ${hosts[*]}"
