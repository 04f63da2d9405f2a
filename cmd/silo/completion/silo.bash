# bash completion for silo (docs/cli.md). Install: source this file from ~/.bashrc, or
# copy it to /usr/share/bash-completion/completions/silo.
_silo() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  fi
  local globals="--endpoint --access-key --secret-key --config --json --quiet --help --version"
  local top="bucket ls put get cat batch rm stat prefetch evict dsort scrub rebalance job cluster node mountpath config"

  # The command path typed so far, options left out.
  local path="" w i
  for ((i = 1; i < cword; i++)); do
    w="${words[i]}"
    case "$w" in
      --endpoint|-e|--access-key|--secret-key|--config|--workers|-w|--offset|--length|--limit|-n|--prefix|-p|--template|-t|--list|-f|--rate|\
      --spec|--shard-size|--input-template|--order|--seed|--content-member|--content-type|--on-duplicate|--memory-limit) ((i++)) ;;
      -*) ;;
      *) path="$path $w" ;;
    esac
  done
  path="${path# }"

  case "$prev" in
    --order) COMPREPLY=($(compgen -W "random key content list" -- "$cur")); return ;;
    --content-type) COMPREPLY=($(compgen -W "int float string" -- "$cur")); return ;;
    --on-duplicate) COMPREPLY=($(compgen -W "keep fail" -- "$cur")); return ;;
    --shard-size|--input-template|--seed|--content-member|--memory-limit) return ;;
    --list) [[ "$path" == dsort* ]] && return ;;  # dsort: BUCKET/NAME, not a file
  esac
  case "$prev" in
    --config|--spec|--list|-f) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --endpoint|-e|--access-key|--secret-key|--workers|-w|--offset|--length|--limit|-n|--template|-t|--rate) return ;;
  esac

  local words_now=""
  case "$path" in
    "") words_now="$top" ;;
    bucket) words_now="create ls rm props policy" ;;
    "bucket props") words_now="show set" ;;
    "bucket policy") words_now="show set rm" ;;
    "bucket props set "*|"bucket create "*)
      words_now="copies= ec.data= ec.parity= ec.min_size= ec=none durability=fsync durability=page_cache write=sync write=async verify_reads= anonymous_read= backend.url=s3:// backend.endpoint= backend.region= backend.access_key= backend.secret_key= backend.revalidate= backend=none"
      compopt -o nospace 2>/dev/null ;;
    job) words_now="ls show wait abort" ;;
    batch) words_now="get" ;;
    "batch get"|"batch get "*) COMPREPLY=($(compgen -f -- "$cur")) ;;
    cluster) words_now="show" ;;
    node) words_now="maintenance decommission" ;;
    "node maintenance") words_now="start stop" ;;
    mountpath) words_now="ls enable disable attach detach" ;;
    config) words_now="show set reset" ;;
    "config set"|"config set "*)
      words_now="durability= proxy_mode= s3.max_object_size= s3.multipart_upload_ttl_h= s3.region= cache.low_wm= cache.high_wm= cache.oos_wm= cache.space_check_interval_ms= cache.first_access= cache.prefetch_workers= cache.range_get_size= cache.range_get_streams= cache.s3.endpoint= cache.s3.region= cache.s3.access_key= cache.s3.secret_key= cache.gs.endpoint= cache.gs.region= cache.gs.access_key= cache.gs.secret_key="
      compopt -o nospace 2>/dev/null ;;
    "config reset"|"config reset "*)
      words_now="durability proxy_mode s3.max_object_size s3.multipart_upload_ttl_h s3.region cache cache.low_wm cache.high_wm cache.oos_wm cache.space_check_interval_ms cache.first_access cache.prefetch_workers cache.range_get_size cache.range_get_streams cache.s3 cache.gs" ;;
    put|put\ *|get\ *) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac

  if [[ "$cur" == -* ]]; then
    local flags="$globals"
    case "$path" in
      ls*) flags="$flags --recursive --long --cached --summary --limit --members" ;;
      put*) flags="$flags --workers --shard-size" ;;
      get*) flags="$flags --offset --length --prefix --workers" ;;
      cat*) flags="$flags --offset --length --archpath --archmode" ;;
      rm*) flags="$flags --prefix" ;;
      "batch get"*) flags="$flags --archmode --continue-on-error" ;;
      prefetch*) flags="$flags --prefix --template --list --workers --wait" ;;
      evict*) flags="$flags --prefix --template --list --forget" ;;
      dsort*) flags="$flags --spec --template --shard-size --prefix --input-template --loose --order --seed --content-member --content-type --list --dry-run --on-duplicate --memory-limit --wait" ;;
      scrub*) flags="$flags --rate --wait" ;;
      rebalance*) flags="$flags --wait" ;;
      "job wait"*) ;;
      "bucket create"*) flags="$flags --ignore-existing" ;;
      "config show"*) flags="$flags --overrides" ;;
      "node maintenance"*|"node decommission"*|"mountpath detach"*) flags="$flags --wait" ;;
    esac
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    return
  fi
  [[ -n "$words_now" ]] && COMPREPLY+=($(compgen -W "$words_now" -- "$cur"))
}
complete -F _silo silo
