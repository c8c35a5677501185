#!/bin/sh
# A crash-state checker for the tiny application whose write logs are
# app-correct.wlog and app-broken.wlog: sector 0 holds a header
# "gen=G block=B", sector B holds "data gen=G", and the application marks
# "commit G" once generation G is durable. An image passes when the header
# (if any) points at its own generation's data, and every committed
# generation is visible. Run by `elevator crash-states --check 'sh
# examples/crash/check-app.sh {}'` with ELEVATOR_CRASH_MARKS set.
img=$1
hdr=$(dd if="$img" bs=512 count=1 2>/dev/null | tr -d '\000')
gen=0
if [ -n "$hdr" ]; then
    gen=${hdr#gen=}; gen=${gen%% *}; blk=${hdr##*block=}
    data=$(dd if="$img" bs=512 skip="$blk" count=1 2>/dev/null | tr -d '\000')
    if [ "$data" != "data gen=$gen" ]; then
        echo "header says generation $gen in sector $blk, which holds '$data'"
        exit 1
    fi
fi
while read -r m; do
    n=${m#commit }
    if [ "$gen" -lt "$n" ]; then
        echo "mark '$m' was recorded, but the header is at generation $gen"
        exit 1
    fi
done < "$ELEVATOR_CRASH_MARKS"
echo "generation $gen ok"
