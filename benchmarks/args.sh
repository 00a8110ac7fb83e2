# The command line of the benchmark scripts (compile-time.sh, user-hooks.sh),
# sourced by them after `set -euo pipefail`:
#
#   bench_args '|runs:a number|work:a directory|quick|' "$@"
#
# Each --NAME VALUE or --NAME=VALUE of an entry NAME:WHAT sets the shell
# variable NAME (a missing VALUE: "--NAME needs WHAT"); each --NAME of an
# entry without ':' sets NAME=1.  -h and --help print the script's header
# comment (usage) and exit 0; anything else is an error (exit 2).

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

bench_args() {
  local _spec=$1 _name _what
  shift
  while [ $# -gt 0 ]; do
    _name=${1#--}
    _name=${_name%%=*}
    case $1 in
      -h|--help) usage; exit 0 ;;
      --*=*)
        case $_spec in
          *"|$_name:"*) printf -v "$_name" '%s' "${1#*=}" ;;
          *) echo "${0##*/}: unknown argument '$1' (try --help)" >&2; exit 2 ;;
        esac ;;
      --*)
        case $_spec in
          *"|$_name:"*) _what=${_spec#*|$_name:}
            printf -v "$_name" '%s' "${2:?$1 needs ${_what%%|*}}"; shift ;;
          *"|$_name|"*) printf -v "$_name" 1 ;;
          *) echo "${0##*/}: unknown argument '$1' (try --help)" >&2; exit 2 ;;
        esac ;;
      *) echo "${0##*/}: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
  done
}
