# Sourced by the set-up scripts: install_missing PACKAGE... installs, with apt,
# the Debian packages that are not installed yet (as root, or with sudo).
install_missing() {
  local missing=() package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if ((${#missing[@]})); then
    echo "popsim setup: installing Debian packages: ${missing[*]}"
    local sudo=""
    if [[ "$(id -u)" -ne 0 ]]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}
