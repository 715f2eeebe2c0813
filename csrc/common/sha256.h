#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace popsim {

// SHA-256 (OpenSSL's libcrypto): the digests of program files and of the
// graphs and options their programs were compiled from. They detect damage
// and tell programs apart; they do not authenticate anyone.
using Sha256 = std::array<uint8_t, 32>;

Sha256 sha256(std::string_view bytes);
// Lower-case hexadecimal, 64 characters.
std::string sha256Hex(std::string_view bytes);
std::string hexDigits(const Sha256& digest);

} // namespace popsim
