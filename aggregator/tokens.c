/*
 * tokens.c — the bearer-token table of glass-aggd: --tokens FILE, one
 * token a line ('#' comments), loaded at start and on SIGHUP (swapped
 * whole under tok_lock), and the constant-time check of a request's token.
 */
#include "aggregator/aggd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int aggd_tokens_load(struct aggd *d, char *msg, size_t msglen)
{
	FILE *f;
	char line[1024], **toks = NULL;
	size_t n = 0;

	if (!d->cfg.tokens)
		return 0;
	if (!(f = fopen(d->cfg.tokens, "r"))) {
		snprintf(msg, msglen, "%s: %s", d->cfg.tokens, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *e;

		while (isspace((unsigned char)*s))
			s++;
		e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (!*s || *s == '#')
			continue;
		char **nt = realloc(toks, (n + 1) * sizeof(*nt));
		if (!nt || !(nt[n] = strdup(s))) {
			toks = nt ? nt : toks;
			while (n)
				free(toks[--n]);
			free(toks);
			fclose(f);
			return -ENOMEM;
		}
		toks = nt;
		n++;
	}
	fclose(f);
	pthread_rwlock_wrlock(&d->tok_lock);
	char **old = d->tokens;
	size_t oldn = d->ntokens;
	d->tokens = toks;
	d->ntokens = n;
	pthread_rwlock_unlock(&d->tok_lock);
	while (oldn)
		free(old[--oldn]);
	free(old);
	return 0;
}

/* Compare without an early exit on the first differing byte. */
static int ct_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char x = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		x |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return !x;
}

int aggd_token_ok(struct aggd *d, const char *tok)
{
	int ok = 0;

	if (!*tok)
		return 0;
	pthread_rwlock_rdlock(&d->tok_lock);
	for (size_t i = 0; i < d->ntokens; i++)
		ok |= ct_equal(d->tokens[i], tok);
	pthread_rwlock_unlock(&d->tok_lock);
	return ok;
}
