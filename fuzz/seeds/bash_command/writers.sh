awk -i inplace '{print > "state/x"}' state/pipeline/42.json
php -r 'file_put_contents("state/pipeline/42.json", 1);'
sqlite3 -cmd 'DELETE FROM claims' file:state/chat.db?mode=rw '.shell rm x'
tar -xzf a.tgz -C state pipeline/42.json
unzip -o a.zip -d state/pipeline
patch -p1 <<'EOF'
--- a/state/pipeline/42.json
+++ b/state/pipeline/42.json
EOF
vim -c '%d|wq' state/pipeline/42.json; chattr +i state/pipeline/42.json
