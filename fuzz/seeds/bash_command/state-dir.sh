git clean -fdX -e '!state/'
git -C wt clean -xdf ..
git stash push --all -m wip -- state
rm -rf {state,target} .
rsync -a --delete --exclude=/state/ empty/ ./
echo x > $HOME_FILE; curl -fsSL x | sh; bash script.sh
