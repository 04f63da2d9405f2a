#!/usr/bin/env bash
# Assembles the root file system of the Silo container image from this build's silod and
# silo and the machine's (Debian's) shared libraries, CA certificates and NSS modules.
#
#   rootfs.sh [--silod PATH] [--silo PATH] [--strip] OUT_DIR [BIN_DIR]
#
# BIN_DIR is a CMake build's cmd/ folder (default build/release/cmd): silod is taken from
# BIN_DIR/silod/silod and silo from BIN_DIR/silo/silo unless --silod/--silo name them.
# OUT_DIR must be missing or empty. --strip drops the debug sections of silod and silo
# (symbols stay, so stack traces keep their names); RelWithDebInfo binaries are ten times
# larger otherwise.
#
# The result holds no shell and no coreutils: /usr/bin/silod, /usr/bin/silo, the libraries
# ldd lists for them at the same paths (symlinks such as /lib -> usr/lib kept), the dynamic
# loader, the NSS modules glibc loads for host name lookups, /etc/ssl/certs/
# ca-certificates.crt, /etc/passwd and /etc/group (root 0, silo 65532), nsswitch.conf,
# /etc/hosts, /tmp (1777), /var/lib/silo (owned by 65532 when run as root), /etc/silo, and
# empty /proc /sys /dev for a runtime or chroot to mount on. Every mtime is
# SOURCE_DATE_EPOCH (default 0), so equal inputs give an equal tree.
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=${here%/deploy/container}
silod="" silo="" strip=0 out="" bin_dir=""
readonly silo_uid=65532
readonly ca_file=/etc/ssl/certs/ca-certificates.crt

die() { echo "rootfs.sh: $*" >&2; exit 1; }
usage() { sed -n '5,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --silod) silod=$2; shift 2;;
    --silo) silo=$2; shift 2;;
    --strip) strip=1; shift;;
    -h|--help) usage 0;;
    -*) die "unknown option $1 (see --help)";;
    *)
      if [ -z "$out" ]; then out=$1
      elif [ -z "$bin_dir" ]; then bin_dir=$1
      else die "unexpected argument $1"; fi
      shift;;
  esac
done
[ -n "$out" ] || usage 2
bin_dir=${bin_dir:-$repo/build/release/cmd}
silod=${silod:-$bin_dir/silod/silod}
silo=${silo:-$bin_dir/silo/silo}
for b in "$silod" "$silo"; do
  [ -x "$b" ] || die "$b is not an executable (build it: cmake --preset release &&" \
    "cmake --build --preset release --target silod silo)"
done
[ -f "$ca_file" ] || die "$ca_file is missing (apt-get install ca-certificates)"
if [ -e "$out" ]; then
  [ -d "$out" ] || die "$out is not a folder"
  shopt -s nullglob dotglob
  existing=("$out"/*)
  shopt -u nullglob dotglob
  [ ${#existing[@]} -eq 0 ] || die "$out is not empty"
fi
[[ $out == /* ]] || out="$PWD/$out"
out=${out%/}
[ -n "$out" ] || die "OUT_DIR must not be /"
umask 022

# A fork costs about 10 ms on these machines, so the copy is planned in bash and done by a
# few batched cp calls: a run takes about a second (chroot tests call it).

# Prints absolute path $1 with "." and ".." components folded (no symlinks resolved).
normalize() {
  local -a parts=() kept=()
  local part
  IFS=/ read -r -a parts <<<"$1"
  for part in "${parts[@]}"; do
    case "$part" in
      ""|.) ;;
      ..) [ ${#kept[@]} -eq 0 ] || unset 'kept[-1]';;
      *) kept+=("$part");;
    esac
  done
  local IFS=/
  echo "/${kept[*]}"
}

# Plans the copy of the host's absolute paths "$@" into $out at the same paths. A symlink
# met on the way (the file itself or a folder above it, as /lib -> usr/lib on merged-/usr
# Debian) is copied as the same symlink and what it points to is copied too, so every path
# resolves inside the image exactly as it does here. Fills `dirs` (folders to create) and
# `entries` (files and symlinks to copy).
declare -A dirs=() entries=()
plan_copy() {
  local -a pending=("$@") links=() rests=() targets=()
  local path prefix rest component i target
  while [ ${#pending[@]} -gt 0 ]; do
    links=() rests=()
    for path in "${pending[@]}"; do
      prefix="" rest=${path#/}
      while [ -n "$rest" ]; do
        component=${rest%%/*}
        if [ "$component" = "$rest" ]; then rest=""; else rest=${rest#*/}; fi
        prefix="$prefix/$component"
        if [ -L "$prefix" ]; then
          entries[$prefix]=1
          links+=("$prefix") rests+=("$rest")
          break
        elif [ -z "$rest" ]; then
          [ -e "$prefix" ] || die "$prefix is missing"
          entries[$prefix]=1
        else
          dirs[$prefix]=1
        fi
      done
    done
    pending=()
    [ ${#links[@]} -gt 0 ] || break
    mapfile -t targets < <(readlink -- "${links[@]}")
    for i in "${!links[@]}"; do
      target=${targets[$i]}
      [[ $target == /* ]] || target="${links[$i]%/*}/$target"
      pending+=("$(normalize "$target${rests[$i]:+/${rests[$i]}}")")
    done
  done
}

# Prints the libraries and the loader that ldd finds for the ELF files given, one per line.
shared_libraries() {
  local line
  ldd "$@" | while read -r line; do
    case "$line" in
      *"not found"*) die "ldd $*: $line";;
      *" => "/*) line=${line#* => }; echo "${line%% (*}";;
      /*:) ;;
      /*) echo "${line%% (*}";;
    esac
  done
}

mkdir -p "$out/usr/bin"
install -m 0755 -t "$out/usr/bin" "$silod" "$silo"
if [ $strip = 1 ]; then
  strip --strip-debug "$out/usr/bin/silod" "$out/usr/bin/silo"
fi

# (Captured first, not read from <(...): a failing ldd must stop the script.)
found=$(shared_libraries "$silod" "$silo" | sort -u)
mapfile -t libs <<<"$found"
# glibc dlopen()s the NSS modules named in nsswitch.conf (getaddrinfo for peer URLs), so
# ldd does not list them. Since glibc 2.34 files and dns are built into libc and these are
# stubs, but an older libc needs them.
libc=""
for lib in "${libs[@]}"; do [[ $lib != */libc.so.6 ]] || libc=$lib; done
[ -n "$libc" ] || die "$silod does not link libc.so.6"
nss=()
for name in libnss_files.so.2 libnss_dns.so.2 libresolv.so.2; do
  if [ -e "${libc%/*}/$name" ]; then nss+=("${libc%/*}/$name"); fi
done
if [ ${#nss[@]} -gt 0 ]; then
  found=$(shared_libraries "${nss[@]}")
  mapfile -t -O ${#libs[@]} libs <<<"$found"
  libs+=("${nss[@]}")
fi
plan_copy "${libs[@]}" "$ca_file"
out_dirs=()
for dir in "${!dirs[@]}"; do out_dirs+=("$out$dir"); done
mkdir -p "${out_dirs[@]}"
# cp -P copies a symlink as a symlink; one cp per destination folder.
declare -A by_dir=()
for entry in "${!entries[@]}"; do by_dir[${entry%/*}/]+="$entry"$'\n'; done
for dir in "${!by_dir[@]}"; do
  mapfile -t group <<<"${by_dir[$dir]%$'\n'}"
  cp -P --preserve=mode -t "$out$dir" "${group[@]}"
done

mkdir -p "$out/usr/lib/ssl" "$out/etc/silo" "$out/var/lib/silo" "$out/tmp" "$out/proc" \
  "$out/sys" "$out/dev" "$out/root"
# OpenSSL's built-in default (OPENSSLDIR /usr/lib/ssl on Debian), for code that does not
# read SSL_CERT_FILE.
ln -s /etc/ssl/certs/ca-certificates.crt "$out/usr/lib/ssl/cert.pem"
ln -s /etc/ssl/certs "$out/usr/lib/ssl/certs"
printf '%s\n' "root:x:0:0:root:/root:/sbin/nologin" \
  "silo:x:$silo_uid:$silo_uid:silo:/var/lib/silo:/sbin/nologin" >"$out/etc/passwd"
printf '%s\n' "root:x:0:" "silo:x:$silo_uid:" >"$out/etc/group"
printf '%s\n' "passwd: files" "group: files" "hosts: files dns" >"$out/etc/nsswitch.conf"
# Container runtimes mount their own /etc/hosts; this one serves a plain chroot.
printf '%s\n' "127.0.0.1 localhost" "::1 localhost ip6-localhost ip6-loopback" \
  >"$out/etc/hosts"
chmod 1777 "$out/tmp"
chmod 0555 "$out/proc" "$out/sys"
chmod 0700 "$out/root"
if [ "$EUID" = 0 ]; then
  chown "$silo_uid:$silo_uid" "$out/var/lib/silo"
else
  echo "rootfs.sh: not root: /var/lib/silo stays owned by $EUID (build.sh sets 65532)" >&2
fi
find "$out" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-0}" {} +
