#!/bin/sh
# A stand-in coding agent for `make run`, run by `tireless work` once per job: the job arrives in
# TIRELESS_* variables and as JSON on stdin; exit 0 delivers it, anything else asks for a retry.
# It behaves by issue number and attempt, so every run tells the same story:
#   numbers 5 and 31 always fail (the store fails them once their 3 attempts are spent);
#   numbers ending in 3 fail their first attempt, then succeed;
#   numbers 6, 14, 22, 30 hang past the 2 s lease on their first attempt (the worker renews it);
#     make run kills the worker that runs 6's, so its lease runs out and the sweeper returns it;
#   an issue whose title says "(a long job)" works 20 s (make run closes its issue meanwhile);
#   the rest work for a moment and succeed.
n=$TIRELESS_NUMBER
attempt=$TIRELESS_ATTEMPT
title=$(sed -n 's/.*"title": "\([^"]*\)".*/\1/p')
echo "agent: $TIRELESS_KIND $TIRELESS_OWNER/$TIRELESS_REPO#$n \"$title\" (lane $TIRELESS_LANE, attempt $attempt)"

case $title in *"(a long job)"*)
    echo "agent: a long job (20 s)"
    sleep 20
    echo "agent: opened a pull request for #$n"
    exit 0
esac

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
echo "agent: opened a pull request for #$n"
