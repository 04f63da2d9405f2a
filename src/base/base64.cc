#include "base/base64.h"

#include <openssl/evp.h>

namespace silo::base64 {

std::string encode(std::span<const unsigned char> bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status::invalid_argument("base64 text length {} is not a multiple of 4", text.size());
  std::string out(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return Status::invalid_argument("not valid base64");
  size_t size = static_cast<size_t>(n);
  // EVP_DecodeBlock keeps the bytes that padding stands for: drop them.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

}  // namespace silo::base64
