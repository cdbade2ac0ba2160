/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpOAuth"

#include "config.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

#include "tools/mcp/confab-mcp-oauth-jwt.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-random.h"

/*
 * The client assertion of `private_key_jwt` (RFC 7523 section 2.2): a JWT
 * with iss = sub = the client id, aud = the authorization server's issuer,
 * a short life and a random jti, signed with the client's key: ES256 for a
 * P-256 key, RS256 for an RSA key (GnuTLS).
 */

#define ASSERTION_LIFETIME_S 300

static gchar *
base64url(const guint8 *data, gsize len)
{
	gchar *text = g_base64_encode(data, len);

	g_strdelimit(text, "+", '-');
	g_strdelimit(text, "/", '_');
	g_strdelimit(text, "=", '\0');
	return text;
}

static gchar *
claims(const gchar *client_id, const gchar *audience)
{
	GString *out = g_string_new("{\"iss\":");
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	guint8 jti[16];

	if (!confab_random_bytes(jti, sizeof jti, NULL)) {
		for (gsize i = 0; i < sizeof jti; i++)
			jti[i] = (guint8)g_random_int();
	}
	confab_json_append_string(out, client_id);
	g_string_append(out, ",\"sub\":");
	confab_json_append_string(out, client_id);
	g_string_append(out, ",\"aud\":");
	confab_json_append_string(out, audience);
	g_string_append_printf(out,
			       ",\"iat\":%" G_GINT64_FORMAT ",\"exp\":%" G_GINT64_FORMAT
			       ",\"jti\":\"",
			       now,
			       now + ASSERTION_LIFETIME_S);
	for (gsize i = 0; i < sizeof jti; i++)
		g_string_append_printf(out, "%02x", jti[i]);
	g_string_append(out, "\"}");
	return g_string_free(out, FALSE);
}

/* The JWS algorithm for @key, or NULL for a key Confab does not sign with. */
static const gchar *
algorithm_of(gnutls_privkey_t key, gnutls_sign_algorithm_t *sign)
{
	unsigned int bits = 0;
	int pk = gnutls_privkey_get_pk_algorithm(key, &bits);

	if (pk == GNUTLS_PK_RSA) {
		*sign = GNUTLS_SIGN_RSA_SHA256;
		return "RS256";
	}
	if (pk == GNUTLS_PK_ECDSA) {
		gnutls_ecc_curve_t curve = GNUTLS_ECC_CURVE_INVALID;
		if (gnutls_privkey_export_ecc_raw(key, &curve, NULL, NULL, NULL) == 0 &&
		    curve == GNUTLS_ECC_CURVE_SECP256R1) {
			*sign = GNUTLS_SIGN_ECDSA_SHA256;
			return "ES256";
		}
	}
	return NULL;
}

/* Copies a DER integer into @out, right-aligned, without its leading
 * zeros; FALSE when it is longer than @len. */
static gboolean
copy_integer(guint8 *out, gsize len, const gnutls_datum_t *value)
{
	const guint8 *data = value->data;
	gsize size = value->size;

	while (size > len && data[0] == 0) {
		data++;
		size--;
	}
	if (size > len)
		return FALSE;
	memcpy(out + len - size, data, size);
	return TRUE;
}

/* JWS wants ECDSA's r and s, 32 bytes each; GnuTLS gives DER. */
static gchar *
ecdsa_raw(const gnutls_datum_t *der)
{
	gnutls_datum_t r = {NULL, 0}, s = {NULL, 0};
	guint8 raw[64] = {0};
	gchar *text = NULL;

	if (gnutls_decode_rs_value(der, &r, &s) != 0)
		return NULL;
	if (copy_integer(raw, 32, &r) && copy_integer(raw + 32, 32, &s))
		text = base64url(raw, sizeof raw);
	gnutls_free(r.data);
	gnutls_free(s.data);
	return text;
}

static gboolean
import_key(gnutls_privkey_t key, const gchar *pem, GError **error)
{
	gnutls_datum_t data = {(unsigned char *)pem, (unsigned int)strlen(pem)};
	int rc = gnutls_privkey_import_x509_raw(key, &data, GNUTLS_X509_FMT_PEM, NULL, 0);

	if (rc != 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "oauth.client_private_key is not a PEM private key: %s",
			    gnutls_strerror(rc));
		return FALSE;
	}
	return TRUE;
}

/**
 * confab_mcp_oauth_jwt_sign:
 * @private_key_pem: a PEM private key (PKCS #8, or PKCS #1 / SEC 1)
 * @client_id: the OAuth client id
 * @audience: the authorization server's issuer
 *
 * Returns: (transfer full): a signed client assertion, or %NULL with
 *   @error set (a key that does not parse, a curve other than P-256)
 */
gchar *
confab_mcp_oauth_jwt_sign(const gchar *private_key_pem,
			  const gchar *client_id,
			  const gchar *audience,
			  GError **error)
{
	gnutls_privkey_t key = NULL;
	gnutls_sign_algorithm_t sign = GNUTLS_SIGN_UNKNOWN;
	gnutls_datum_t signature = {NULL, 0};
	g_autofree gchar *header = NULL, *header64 = NULL, *body = NULL, *body64 = NULL;
	g_autofree gchar *input = NULL, *signature64 = NULL;
	const gchar *alg;
	gnutls_datum_t data;

	if (private_key_pem == NULL || gnutls_privkey_init(&key) != 0) {
		g_set_error(error, CONFAB_ERROR, CONFAB_ERROR_FAILED, "no private key");
		return NULL;
	}
	if (!import_key(key, private_key_pem, error)) {
		gnutls_privkey_deinit(key);
		return NULL;
	}
	alg = algorithm_of(key, &sign);
	if (alg == NULL) {
		gnutls_privkey_deinit(key);
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "oauth.client_private_key must be an RSA or a P-256 key");
		return NULL;
	}
	header = g_strdup_printf("{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
	header64 = base64url((const guint8 *)header, strlen(header));
	body = claims(client_id, audience);
	body64 = base64url((const guint8 *)body, strlen(body));
	input = g_strconcat(header64, ".", body64, NULL);
	data.data = (unsigned char *)input;
	data.size = strlen(input);
	if (gnutls_privkey_sign_data2(key, sign, 0, &data, &signature) == 0) {
		signature64 = strcmp(alg, "ES256") == 0 ? ecdsa_raw(&signature)
							: base64url(signature.data, signature.size);
		gnutls_free(signature.data);
	}
	gnutls_privkey_deinit(key);
	if (signature64 == NULL) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "signing the assertion failed");
		return NULL;
	}
	return g_strconcat(input, ".", signature64, NULL);
}
