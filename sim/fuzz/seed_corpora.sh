#!/usr/bin/env bash
# Seeds the fuzz corpora from the real spec files in shared/data/tree-specs (found beside the
# checkout), plus Sylva text written from them when a `sylva_text` seed folder is wanted.
set -euo pipefail
cd "$(dirname "$0")"
data="${SYLVA_TREE_SPECS:-}"
if [ -z "$data" ]; then
    dir="$(pwd)"
    while [ "$dir" != "/" ]; do
        if [ -d "$dir/shared/data/tree-specs" ]; then data="$dir/shared/data/tree-specs"; break; fi
        dir="$(dirname "$dir")"
    done
fi
[ -n "$data" ] || { echo "shared/data/tree-specs not found (set SYLVA_TREE_SPECS)" >&2; exit 1; }
# seed TARGET FILE...: copies the files into corpus/TARGET under names without spaces.
seed() {
    local target="$1"
    shift
    mkdir -p "corpus/$target"
    for f in "$@"; do
        cp "$f" "corpus/$target/$(basename "$f" | tr ' ' '_')-$(md5sum "$f" | cut -c1-8)"
    done
}
IFS=$'\n'
seed arbaro_xml $(find "$data/arbaro-xml" -type f ! -name SOURCES.md)
seed helios_xml $(find "$data/helios-xml" -name '*.xml')
seed sapling $(find "$data/sapling-py" -name '*.py')
seed treegen $(find "$data/treegen-py" -name '*.py')
seed load_any $(find "$data" -type f ! -name SOURCES.md)
# Sylva text: every real spec written by Sylva (stable toolchain is enough for the example).
cargo run -q --release --example write_sylva_seeds -- corpus/sylva_text $(find "$data" -type f ! -name SOURCES.md)
cp corpus/sylva_text/* corpus/load_any/
unset IFS
echo "seeded corpora from $data"
# L-systems: two small grammars in Sylva's L-system format; attraction points: a few lines.
mkdir -p corpus/lsystem corpus/points
printf 'name = seed-a\naxiom = F\nangle = 25.7\niterations = 3\nlength = 0.5\nF -> F[+F]F[-F]F\n' > corpus/lsystem/abop-a
printf 'name = seed-s\naxiom = X\nangle = 22.5\niterations = 4\nX -> (0.5) F[+X][-X]FX | (0.5) F[&X][^X]L\nF -> FF\n' > corpus/lsystem/stochastic
printf '# x y z\n0 5 0\n1.5, 6, -0.25\n-2 4.5 1e-1\n' > corpus/points/three
