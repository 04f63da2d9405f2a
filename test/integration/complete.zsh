# Prints what zsh's completion system lists for a command line, the way a user's
# interactive zsh shows it after TAB (raw terminal output, escapes included):
#   zsh -f complete.zsh COMPLETION_DIR 'silo mountpath '
# An interactive zsh runs in a pseudo-terminal (zsh/zpty), loads compinit with
# COMPLETION_DIR first on $fpath (so cmd/silo/completion/_silo answers for `silo`), gets
# the line and a TAB, then a command whose output marks the end.
zmodload zsh/zpty || exit 2
zpty shell zsh -f -i || exit 2
zpty -w shell "PS1='> '; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D; zstyle ':completion:*' menu no; silo() { :; }; print READY-\$((40+2))"
# Typed while compinit still runs, the line would be flushed: wait for the shell first.
zpty -r -m shell setup '*READY-42*> *' || exit 3
zpty -w -n shell "$2"$'\t'
# Clear the line, then print a marker computed by the shell (the typed text never matches).
zpty -w shell $'\C-u'"print COMPLETION-\$((40+2))-DONE"
zpty -r -m shell out '*COMPLETION-42-DONE*' || exit 3
print -r -- "$out"
zpty -d shell
