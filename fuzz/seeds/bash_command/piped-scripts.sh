echo 'rm state/pipeline/42.json' | bash -s
source /dev/stdin <<< 'echo x > state/pipeline/42.json'
. <(echo 'rm x')
{ echo 'rm y'; } | sh
