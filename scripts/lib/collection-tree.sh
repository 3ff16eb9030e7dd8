# shellcheck shell=bash
# Copy the working tree (tracked and untracked-but-not-ignored files) to
# $1/ansible_collections/rdmaops/roce as a fresh git checkout, which ansible-test requires.
collection_tree() {
  local dest="$1/ansible_collections/rdmaops/roce"
  rm -rf "$1"
  mkdir -p "$dest"
  git -C "$REPO_ROOT" ls-files -z --cached --others --exclude-standard \
    | (cd "$REPO_ROOT" && xargs -0 -I{} sh -c 'test -e "{}" && cp --parents -P "{}" "'"$dest"'"/')
  git -C "$dest" init -q
  git -C "$dest" add -A
  git -C "$dest" -c user.name=ci -c user.email=ci@localhost commit -qm snapshot
  echo "$dest"
}
