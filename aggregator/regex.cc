/*
 * regex.cc — the C++ shim between glass-aggd and RE2 (regex.h).  No
 * exception leaves it: RE2 reports errors by code, and an allocation
 * failure ends in -ENOMEM.
 */
#include "aggregator/regex.h"

#include <errno.h>
#include <stdio.h>
#include <new>
#include <re2/re2.h>

struct agg_re {
	RE2 *re;
	int anchored;
};

extern "C" int agg_re_compile(const char *pat, int anchored, size_t max_len, int64_t max_mem,
			      struct agg_re **out, char *msg, size_t msglen)
{
	size_t n = 0;

	while (pat[n] && n <= max_len)
		n++;
	if (n > max_len) {
		snprintf(msg, msglen, "pattern longer than %zu bytes (--max-regex-len)", max_len);
		return -EINVAL;
	}
	RE2::Options o;
	o.set_log_errors(false);
	o.set_max_mem(max_mem);
	o.set_never_capture(true);
	struct agg_re *r = new (std::nothrow) agg_re;
	if (!r)
		return -ENOMEM;
	r->anchored = anchored;
	r->re = new (std::nothrow) RE2(re2::StringPiece(pat, n), o);
	if (!r->re) {
		delete r;
		return -ENOMEM;
	}
	if (!r->re->ok()) {
		if (r->re->error_code() == RE2::ErrorPatternTooLarge)
			snprintf(msg, msglen, "pattern needs more than %lld bytes compiled (--max-regex-mem)",
				 (long long)max_mem);
		else
			snprintf(msg, msglen, "bad regular expression: %s", r->re->error().c_str());
		delete r->re;
		delete r;
		return -EINVAL;
	}
	*out = r;
	return 0;
}

extern "C" int agg_re_match(const struct agg_re *r, const char *text, size_t len)
{
	re2::StringPiece s(text, len);

	return r->anchored ? RE2::FullMatch(s, *r->re) : RE2::PartialMatch(s, *r->re);
}

extern "C" void agg_re_free(struct agg_re *r)
{
	if (!r)
		return;
	delete r->re;
	delete r;
}
