#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Time formats of the S3 API, in UTC, without the C library's time zone state.
namespace silo::s3 {

std::string format_iso8601(int64_t unix_nanos);       // "2009-10-12T17:50:30.000Z"
std::string format_http_date(int64_t unix_seconds);   // "Mon, 12 Oct 2009 17:50:30 GMT"
std::string format_amz_date(int64_t unix_seconds);    // "20091012T175030Z"
// IMF-fixdate, RFC 850 and asctime (RFC 9110 5.6.7), and RFC 2822's forms ("Sun, 6 Nov
// 1994 08:49:37 -0000": a numeric zone, optional weekday and seconds); nullopt for
// anything else.
std::optional<int64_t> parse_http_date(std::string_view text);
std::optional<int64_t> parse_amz_date(std::string_view text);  // "20130524T000000Z"
// "2009-10-12T17:50:30Z" or with fractional seconds; seconds since the epoch.
std::optional<int64_t> parse_iso8601(std::string_view text);

}  // namespace silo::s3
