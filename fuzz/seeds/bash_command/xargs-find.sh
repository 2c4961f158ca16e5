echo state/pipeline/42.json | xargs -I{} truncate -s0 {}
find state -name '*.json' -exec cp /dev/null {} \;
find . -path ./state -prune -o -name '*.o' -delete
