python3 - <<'EOF'
import os
open("state/pipeline/42.json", "w").write(f"{os.getcwd()}")
EOF
rm -rf state/chat.db* $(echo x) `date` ${HOME}/x
