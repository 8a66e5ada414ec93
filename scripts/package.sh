#!/usr/bin/env bash
# scripts/package.sh: builds the Debian package of hsd,
# target/debian/hsd_<version>_<arch>.deb, from the release build.
#
# The package (files under packaging/debian/): /usr/bin/hsd, the systemd
# unit /lib/systemd/system/hsd.service, the conffile /etc/hsd/hsd.toml,
# the man page hsd(1) (made here from the binary's --help, so it never
# disagrees with it), the README, docs/operations.md and CHANGELOG.md under
# /usr/share/doc/hsd, and the maintainer scripts that make and remove the
# user hsd and enable the service. Dependencies are what dpkg-shlibdeps
# finds the binary needs, plus adduser. Nothing is fetched at install time.
# Needs dpkg-dev (dpkg-deb, dpkg-shlibdeps; build-essential brings it).
#
# Usage: scripts/package.sh                   release build (cargo build --release)
#        scripts/package.sh --profile debug   package target/debug/hsd instead
#                                             (CI: the tests' build, packed in
#                                             seconds; same files otherwise)
#        ... --no-build                       package the binary already built
#                                             (no cargo: scripts/test.sh runs
#                                             this beside its own cargo)
# Prints the .deb's path on its last line.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

profile=release
build=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile) profile=${2:?--profile needs release or debug}; shift 2 ;;
        --no-build) build=0; shift ;;
        *) echo "usage: $0 [--profile release|debug] [--no-build]" >&2; exit 2 ;;
    esac
done
case "$profile" in
    release) cargo_args=(--release) ;;
    debug) cargo_args=() ;;
    *) echo "package.sh: --profile is release or debug, not $profile" >&2; exit 2 ;;
esac
[[ $build -eq 1 ]] && cargo build "${cargo_args[@]}" -p hsd --bin hsd
bin=$ROOT/target/$profile/hsd
[[ -x "$bin" ]] || { echo "package.sh: no $bin (build it, or drop --no-build)" >&2; exit 1; }

version=$(cargo metadata --no-deps --format-version 1 --manifest-path "$ROOT/Cargo.toml" \
    | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "hsd"))')
arch=$(dpkg --print-architecture)
out=$ROOT/target/debian
stage=$out/hsd_${version}_${arch}
deb=$out/hsd_${version}_${arch}.deb
src=$ROOT/packaging/debian

rm -rf "$stage"
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/etc/hsd" \
    "$stage/usr/share/man/man1" "$stage/usr/share/doc/hsd" "$stage/usr/share/lintian/overrides" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/hsd/monitoring"

# The binary without its debug sections (the symbols stay, for backtraces:
# lintian's unstripped-binary-or-object is overridden, with that reason).
objcopy --strip-debug "$bin" "$stage/usr/bin/hsd"
chmod 0755 "$stage/usr/bin/hsd"
install -m 0644 "$src/lintian-overrides" "$stage/usr/share/lintian/overrides/hsd"
install -m 0644 "$src/hsd.service" "$stage/lib/systemd/system/hsd.service"
"$bin" completions bash >"$stage/usr/share/bash-completion/completions/hsd"
chmod 0644 "$stage/usr/share/bash-completion/completions/hsd"
# It may hold secrets (a backend URL's password, the SASL password):
# readable by root and, through postinst's dpkg-statoverride, group hsd.
install -m 0640 "$src/hsd.toml" "$stage/etc/hsd/hsd.toml"
install -m 0644 "$src/copyright" "$stage/usr/share/doc/hsd/copyright"
# A Grafana dashboard and Prometheus alert rules over hsd's series.
install -m 0644 "$ROOT/packaging/monitoring/hsd-dashboard.json" \
    "$ROOT/packaging/monitoring/hsd-alerts.yml" "$stage/usr/share/hsd/monitoring/"
# Every doc: the config file and the README name them (docs/X.md is
# /usr/share/doc/hsd/X.md.gz).
for doc in README.md CHANGELOG.md docs/*.md; do
    gzip -9n <"$ROOT/$doc" >"$stage/usr/share/doc/hsd/$(basename "$doc").gz"
done
# Who signs the package: DEBFULLNAME and DEBEMAIL, as Debian's own tools
# read them; the project's placeholder otherwise.
maintainer="${DEBFULLNAME:-hsd developers} <${DEBEMAIL:-hsd-developers@example.org}>"
# The Debian changelog of a native package, where Debian tools look for it;
# the changes themselves are in CHANGELOG.md.
changelog_date=$(git -C "$ROOT" log -1 --format=%cD 2>/dev/null || date -R)
{
    echo "hsd ($version) unstable; urgency=medium"
    echo
    echo "  * Release $version; the changes are in /usr/share/doc/hsd/CHANGELOG.md.gz."
    echo
    echo " -- $maintainer  $changelog_date"
} | gzip -9n >"$stage/usr/share/doc/hsd/changelog.gz"

# hsd(1) from the binary's own help: each command's --help verbatim.
roff_verbatim() {
    # Lines folded at 72 columns (man indents them by 7), a folded line indented under its start;
    # backslashes escaped; a line starting with . or ' is not a request.
    python3 -c 'import sys, textwrap
for line in sys.stdin.read().splitlines():
    indent = line[: len(line) - len(line.lstrip())]
    print("\n".join(textwrap.wrap(line, 72, initial_indent="", subsequent_indent=indent + "  ",
                                   break_on_hyphens=False, drop_whitespace=True)) or "")' \
        | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}
{
    echo ".TH HSD 1 \"\" \"hsd $version\" \"User Commands\""
    echo ".SH NAME"
    echo "hsd \\- HandlerSocket server for SQLite and MySQL/MariaDB tables"
    echo ".SH SYNOPSIS"
    echo ".B hsd serve"
    echo "[\\fIOPTIONS\\fR]"
    echo ".br"
    echo ".B hsd check"
    echo "[\\fIOPTIONS\\fR]"
    echo ".br"
    echo ".B hsd sql"
    echo "[\\fB\\-\\-data\\-dir\\fR \\fIDIR\\fR] \\fIdb\\fR \\fIstatement\\fR"
    echo ".SH DESCRIPTION"
    echo ".nf"
    "$bin" --help | roff_verbatim
    echo ".fi"
    for cmd in serve check sql; do
        echo ".SH \"hsd $cmd\""
        echo ".nf"
        "$bin" "$cmd" --help | roff_verbatim
        echo ".fi"
    done
    echo ".SH FILES"
    echo ".TP"
    echo ".I /etc/hsd/hsd.toml"
    echo "The service's settings: every option, commented, with its default."
    echo ".TP"
    echo ".I /var/lib/hsd"
    echo "The embedded store's db files (\\fIdb\\fR.sqlite), owned by the user hsd."
    echo ".TP"
    echo ".I /lib/systemd/system/hsd.service"
    echo "The systemd unit: \\fBsystemctl status hsd\\fR, \\fBjournalctl \\-u hsd\\fR."
    echo ".SH EXIT STATUS"
    echo "0 on success; 1 when hsd cannot start or stops on an error, and when"
    echo ".B hsd check"
    echo "finds a warning or an error; 2 for a usage error."
    echo ".SH VERSION"
    "$bin" --version | roff_verbatim
    echo ".SH SEE ALSO"
    echo "/usr/share/doc/hsd/operations.md.gz, /usr/share/doc/hsd/README.md.gz"
} | gzip -9n >"$stage/usr/share/man/man1/hsd.1.gz"

# Dependencies of the binary: dpkg-shlibdeps reads a debian/control.
shlibs_dir=$(mktemp -d)
trap 'rm -rf "$shlibs_dir"' EXIT
mkdir "$shlibs_dir/debian"
printf 'Source: hsd\n\nPackage: hsd\nArchitecture: any\n' >"$shlibs_dir/debian/control"
depends=$(cd "$shlibs_dir" && dpkg-shlibdeps -O "-e$stage/usr/bin/hsd" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[[ -n "$depends" ]] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

for script in postinst prerm postrm; do
    install -m 0755 "$src/$script" "$stage/DEBIAN/$script"
done
echo /etc/hsd/hsd.toml >"$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
    -e "s/@DEPENDS@/$depends/" -e "s|@MAINTAINER@|$maintainer|" "$src/control" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' \
    | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"

# xz as Debian's archive uses; a debug build (26 MB of code) in gzip, which
# takes seconds where xz takes half a minute.
compress=-Zxz
[[ "$profile" == debug ]] && compress=-Zgzip
dpkg-deb --root-owner-group "$compress" --build "$stage" "$deb" >/dev/null
rm -rf "$stage"
echo "$deb"
