#!/bin/sh
# A stand-in coding agent for `make run`, run by `tireless work --deliver` once per job: the job
# arrives in TIRELESS_* variables and as JSON on stdin, in a workspace of the issue's repository
# (its working directory, TIRELESS_WORKSPACE); exit 0 delivers it, anything else asks for a retry.
# It holds no token and pushes nothing: for an implement job tireless commits what it changed,
# pushes the branch tireless/<number> and opens the pull request, with the report it leaves in
# TIRELESS_REPORT_FILE. It behaves by issue number, title and attempt, so every run tells the same
# story:
#   numbers 5 and 31 always fail (the store fails them once their 3 attempts are spent);
#   numbers ending in 3 fail their first attempt, then succeed;
#   numbers 6, 14, 22, 30 hang past the 2 s lease on their first attempt (the worker renews it);
#     make run kills the worker that runs 6's, so its lease runs out and the sweeper returns it;
#   an issue whose title says "(a long job)" works 20 s (make run closes its issue meanwhile);
#   the rest work for a moment and succeed. An implement job adds notes/<number>.md and a line to
#   CHANGELOG.md, except "Explore a plugin system" (it changes nothing: delivered, no change), and
#   "Plan the 2.0 migration" asks for a draft pull request; plan and discover jobs read their
#   workspace and report, changing nothing; "Plan the search feature" also writes a plan of three
#   steps ("Search: ..."), which succeed at once, the second depending on the first.
# A revision (a review asked for changes: TIRELESS_REVIEW_FILE names its markdown) starts from the
# pull request's head; it answers each inline comment in notes/<number>.md, and tireless pushes
# that as a second commit of the same pull request.
n=$TIRELESS_NUMBER
attempt=$TIRELESS_ATTEMPT
title=$(sed -n 's/.*"title": "\([^"]*\)".*/\1/p')
echo "agent: $TIRELESS_KIND $TIRELESS_OWNER/$TIRELESS_REPO#$n \"$title\" (lane $TIRELESS_LANE, attempt $attempt)"

case $title in *"(a long job)"*)
    echo "agent: a long job (20 s)"
    sleep 20
    ;;
"Plan the search feature" | "Search: "*)
    sleep 0.3  # make run's plan and its three steps: each succeeds at once
    ;;
*)
    if [ $((n % 13)) -eq 5 ]; then
        sleep 0.3
        echo "agent: the test suite fails on main; giving up"
        exit 1
    fi
    if [ $((n % 10)) -eq 3 ] && [ "$attempt" -eq 1 ]; then
        sleep 0.3
        echo "agent: 2 tests failed after the change"
        exit 2
    fi
    if [ $((n % 8)) -eq 6 ] && [ "$attempt" -eq 1 ]; then
        echo "agent: a long build (5 s, past the lease; the worker keeps renewing it)"
        sleep 5
    fi
    sleep "0.$((n * 37 % 8 + 2))"
esac

if [ "$title" = "Plan the search feature" ]; then
    # A plan of three steps (TIRELESS_PLAN_FILE): tireless opens an issue for each once the job is
    # delivered; the second depends on the first (task 0), so its job waits until #first closes.
    cat > "$TIRELESS_PLAN_FILE" <<'PLAN'
[
  {"title": "Search: index the widgets by name", "body": "Build the index the search reads.", "depends_on": []},
  {"title": "Search: add a search function", "body": "Find widgets by name, on the index.", "depends_on": [0]},
  {"title": "Search: document it", "body": "A section of the README.", "depends_on": []}
]
PLAN
fi
if [ "$TIRELESS_KIND" != implement ]; then
    case $TIRELESS_KIND in plan) what="A plan" ;; *) what="Findings" ;; esac
    printf '%s for #%s, from the %s files of %s/%s at %s.\n' "$what" "$n" \
        "$(git ls-files | wc -l)" "$TIRELESS_OWNER" "$TIRELESS_REPO" "$(git rev-parse --short HEAD)" \
        > "$TIRELESS_REPORT_FILE"
    echo "agent: reported on #$n"
    exit 0
fi
if [ -n "${TIRELESS_REVIEW_FILE:-}" ] && [ -s "$TIRELESS_REVIEW_FILE" ]; then
    # review.md: "## Review <id> by <login> on pull request #<n>", its text, then per inline
    # comment "### <path>:<line>" and the comment's text.
    asked=$(awk '/^## (Review|Comment) /{print tolower($2) " " $3 " by " $5; exit}' "$TIRELESS_REVIEW_FILE")
    inline=$(grep -c '^### ' "$TIRELESS_REVIEW_FILE")
    [ "$inline" -eq 1 ] && comments="inline comment" || comments="inline comments"
    {
        printf '\n## After %s\n\n' "${asked:-the review}"
        awk '/^### /{at = substr($0, 5); next} at != "" && NF {print "- " at ": \"" $0 "\": done."; at = ""}' \
            "$TIRELESS_REVIEW_FILE"
    } >> "notes/$n.md"
    printf 'Answered %s (%s %s) in notes/%s.md.\n' "${asked:-the review}" "$inline" "$comments" "$n" \
        > "$TIRELESS_REPORT_FILE"
    echo "agent: answered ${asked:-the review} in notes/$n.md"
    exit 0
fi
case $title in "Explore a plugin system")
    echo "Explored: the widgets need no plugin system yet; nothing to change." > "$TIRELESS_REPORT_FILE"
    echo "agent: nothing to change for #$n"
    exit 0
esac
mkdir -p notes
printf '# %s\n\nWhat changed for #%s, and why.\n' "$title" "$n" > "notes/$n.md"
echo "- $title (#$n)" >> CHANGELOG.md
printf 'Added notes/%s.md and a line to CHANGELOG.md.\n' "$n" > "$TIRELESS_REPORT_FILE"
case $title in "Plan the 2.0 migration")
    echo "::draft::"  # a draft pull request: a person finishes it
esac
echo "agent: changed notes/$n.md and CHANGELOG.md for #$n"
