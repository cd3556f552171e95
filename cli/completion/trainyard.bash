# bash completion for trainyard (cli/README.md). Install as
# /usr/share/bash-completion/completions/trainyard, or source it.
# Completes commands, subcommands and options; job ids and node names come
# from the server only when asked for (they need a request, so they are
# not guessed here).

_trainyard() {
    local cur prev cmd sub
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]:-}
    sub=${COMP_WORDS[2]:-}

    local commands="login logout submit ls show logs cancel queue nodes drain undrain templates advisor deploy deployments canary rollback chat tokens models audit version help"
    local common="--json --server --help"

    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
        return 0
    fi
    case "$prev" in
        --server) return 0 ;;
        --state)
            mapfile -t COMPREPLY < <(compgen -W "QUEUED PLACED STARTING RUNNING RESTARTING SUCCEEDED FAILED CANCELLED" -- "$cur")
            return 0 ;;
        --priority)
            mapfile -t COMPREPLY < <(compgen -W "low normal high" -- "$cur")
            return 0 ;;
        --stream)
            mapfile -t COMPREPLY < <(compgen -W "stdout stderr" -- "$cur")
            return 0 ;;
        --format)
            mapfile -t COMPREPLY < <(compgen -W "jsonl csv" -- "$cur")
            return 0 ;;
        --public-key|-o|--output)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return 0 ;;
    esac
    local opts=""
    case "$cmd" in
        login) opts="--user --json --help" ;;
        logout) opts="--json --help" ;;
        submit) opts="--template --param --dataset --gpus --team --name --idempotency-key $common"
                if [[ $cur != -* ]]; then
                    mapfile -t COMPREPLY < <(compgen -f -X '!*.json' -- "$cur"; compgen -d -- "$cur")
                    return 0
                fi ;;
        ls) opts="--state --team --user --limit --cursor $common" ;;
        show|cancel) opts="$common"; [ "$cmd" = cancel ] && opts="--reason $opts" ;;
        logs) opts="-f --follow --rank --attempt --stream $common" ;;
        queue) opts="--team --user --mine --limit --cursor --all $common" ;;
        nodes)
            if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "join-tokens" -- "$cur")
                return 0
            fi
            if [ "$sub" = join-tokens ] && [ "$COMP_CWORD" -eq 3 ] && [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "list create revoke" -- "$cur")
                return 0
            fi
            opts="$common"
            [ "$sub" = join-tokens ] && opts="--uses --ttl-s --node $opts" ;;
        drain|undrain|templates) opts="$common" ;;
        advisor) opts="$common"
                 if [[ $cur != -* ]]; then
                     mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                     return 0
                 fi ;;
        deploy) opts="--name --replicas --max-replicas --gpus --team --priority $common" ;;
        canary) opts="--weight --bound --replicas $common" ;;
        rollback) opts="$common" ;;
        deployments)
            if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "list show scale stop start" -- "$cur")
                return 0
            fi
            opts="$common"
            [ "$sub" = scale ] && opts="--replicas $opts" ;;
        chat) opts="-m --message --key $common" ;;
        tokens)
            if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "list create revoke" -- "$cur")
                return 0
            fi
            opts="--all --expires-in-s $common" ;;
        models)
            if [ "$COMP_CWORD" -eq 2 ] && [[ $cur != -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "list show register alias" -- "$cur")
                return 0
            fi
            case "$sub" in
                register) opts="--job --checkpoint --description $common" ;;
                alias) opts="--delete $common" ;;
                show) opts="$common" ;;
                *) opts="--limit --cursor $common" ;;
            esac ;;
        audit)
            if [ "$COMP_CWORD" -eq 2 ]; then
                mapfile -t COMPREPLY < <(compgen -W "export verify" -- "$cur")
                return 0
            fi
            case "$sub" in
                export) opts="--format --from --to -o --output --server --help" ;;
                verify) opts="--public-key --json --help"
                        if [[ $cur != -* ]]; then
                            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                            return 0
                        fi ;;
            esac ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    return 0
}
complete -F _trainyard trainyard
