f=state/pipeline/42.json; echo x > $f
echo x > $(printf '%s/42.json' state/pipeline)
rm -f `echo state/pipeline/42.json`
