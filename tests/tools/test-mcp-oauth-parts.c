/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <string.h>

#include "tools/mcp/confab-mcp-oauth-jwt.h"
#include "tools/mcp/confab-mcp-oauth-metadata.h"
#include "util/confab-json.h"

/*
 * The pieces of Confab's OAuth client that need no server: where discovery
 * looks and in what order, which URLs and resources are accepted, scope
 * unions, and the private_key_jwt assertion (ES256 for P-256, RS256 for
 * RSA), verified here with the public key.
 */

static void
assert_urls(GPtrArray *urls, const gchar *const *expected)
{
	g_assert_cmpuint(urls->len, ==, g_strv_length((gchar **)expected));
	for (guint i = 0; i < urls->len; i++)
		g_assert_cmpstr(urls->pdata[i], ==, expected[i]);
}

static void
test_discovery_order(void)
{
	const gchar *const prm[] = {"https://m.example/custom.json",
				    "https://m.example/.well-known/oauth-protected-resource/v1/mcp",
				    "https://m.example/.well-known/oauth-protected-resource",
				    NULL};
	const gchar *const as_path[] = {
	    "https://a.example/.well-known/oauth-authorization-server/tenant1",
	    "https://a.example/.well-known/openid-configuration/tenant1",
	    "https://a.example/tenant1/.well-known/openid-configuration",
	    NULL};
	const gchar *const as_root[] = {"https://a.example/.well-known/oauth-authorization-server",
					"https://a.example/.well-known/openid-configuration",
					NULL};
	g_autoptr(GPtrArray) a =
	    confab_mcp_oauth_metadata_resource_metadata_urls("https://m.example/v1/mcp",
							     "https://m.example/custom.json");
	g_autoptr(GPtrArray) b =
	    confab_mcp_oauth_metadata_server_metadata_urls("https://a.example/tenant1/");
	g_autoptr(GPtrArray) c =
	    confab_mcp_oauth_metadata_server_metadata_urls("https://a.example");

	assert_urls(a, prm);
	assert_urls(b, as_path);
	assert_urls(c, as_root);
}

static void
test_urls_and_resources(void)
{
	g_assert_true(confab_mcp_oauth_metadata_url_allowed("https://a.example/token", NULL));
	g_assert_true(confab_mcp_oauth_metadata_url_allowed("http://127.0.0.1:9/token", NULL));
	g_assert_true(confab_mcp_oauth_metadata_url_allowed("http://localhost:9/token", NULL));
	g_assert_true(confab_mcp_oauth_metadata_url_allowed("http://[::1]:9/token", NULL));
	g_assert_false(confab_mcp_oauth_metadata_url_allowed("http://a.example/token", NULL));
	g_assert_false(confab_mcp_oauth_metadata_url_allowed("ftp://a.example/token", NULL));
	g_assert_false(confab_mcp_oauth_metadata_url_allowed("/token", NULL));

	g_assert_true(confab_mcp_oauth_metadata_resource_covers("https://M.example/mcp/",
								"https://m.example/mcp"));
	g_assert_true(confab_mcp_oauth_metadata_resource_covers("https://m.example",
								"https://m.example/mcp"));
	g_assert_false(confab_mcp_oauth_metadata_resource_covers("https://m.example/mc",
								 "https://m.example/mcp"));
	g_assert_false(confab_mcp_oauth_metadata_resource_covers("https://evil.example/mcp",
								 "https://m.example/mcp"));
	g_assert_false(confab_mcp_oauth_metadata_same_origin("https://m.example:8443/x",
							     "https://m.example/x"));
}

static void
test_scopes_and_challenges(void)
{
	g_autofree gchar *u = confab_mcp_oauth_metadata_scope_union("a b", "b c");
	g_autofree gchar *none = confab_mcp_oauth_metadata_scope_union(NULL, " ");
	g_autoptr(ConfabMcpOAuthChallenge) c = confab_mcp_oauth_metadata_parse_challenge(
	    "Bearer error=\"insufficient_scope\", scope=\"a \\\"b\\\"\", resource_metadata=x");
	g_autoptr(ConfabMcpOAuthChallenge) basic =
	    confab_mcp_oauth_metadata_parse_challenge("Basic realm=\"x\"");

	g_assert_cmpstr(u, ==, "a b c");
	g_assert_null(none);
	g_assert_cmpstr(c->error, ==, "insufficient_scope");
	g_assert_cmpstr(c->scope, ==, "a \"b\"");
	g_assert_cmpstr(c->resource_metadata, ==, "x");
	g_assert_null(basic->scope);
}

static gchar *
base64url_decode(const gchar *text, gsize len, gsize *out_len)
{
	g_autoptr(GString) s = g_string_new_len(text, len);
	guchar *data;

	g_strdelimit(s->str, "-", '+');
	g_strdelimit(s->str, "_", '/');
	while (s->len % 4 != 0)
		g_string_append_c(s, '=');
	data = g_base64_decode(s->str, out_len);
	return (gchar *)data;
}

/* Signs with a new key of @algorithm, checks the header, the claims and
 * the signature with the public key. */
static void
check_jwt(gnutls_pk_algorithm_t algorithm, guint bits, const gchar *alg)
{
	gnutls_x509_privkey_t x509 = NULL;
	gnutls_privkey_t key = NULL;
	gnutls_pubkey_t pub = NULL;
	gnutls_datum_t pem = {NULL, 0};
	g_autofree gchar *pem_text = NULL;
	g_autofree gchar *jwt = NULL;
	g_autofree gchar *header = NULL, *claims = NULL, *sig = NULL;
	g_auto(GStrv) parts = NULL;
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;
	gsize header_len, claims_len, sig_len;
	gnutls_datum_t data, signature;
	JsonObject *object;

	g_assert_cmpint(gnutls_x509_privkey_init(&x509), ==, 0);
	g_assert_cmpint(gnutls_x509_privkey_generate(x509, algorithm, bits, 0), ==, 0);
	g_assert_cmpint(gnutls_x509_privkey_export2_pkcs8(x509, GNUTLS_X509_FMT_PEM, NULL, 0, &pem),
			==,
			0);
	pem_text = g_strndup((const gchar *)pem.data, pem.size);
	gnutls_free(pem.data);

	jwt = confab_mcp_oauth_jwt_sign(pem_text, "client-1", "https://auth.example", &error);
	g_assert_no_error(error);
	parts = g_strsplit(jwt, ".", -1);
	g_assert_cmpuint(g_strv_length(parts), ==, 3);
	header = base64url_decode(parts[0], strlen(parts[0]), &header_len);
	g_assert_nonnull(strstr(header, alg));
	claims = base64url_decode(parts[1], strlen(parts[1]), &claims_len);
	root = confab_json_parse(claims, claims_len, 8, &error);
	g_assert_no_error(error);
	object = json_node_get_object(root);
	g_assert_cmpstr(json_object_get_string_member(object, "iss"), ==, "client-1");
	g_assert_cmpstr(json_object_get_string_member(object, "sub"), ==, "client-1");
	g_assert_cmpstr(json_object_get_string_member(object, "aud"), ==, "https://auth.example");
	g_assert_cmpint(json_object_get_int_member(object, "exp"),
			>,
			json_object_get_int_member(object, "iat"));

	/* the signature, with the public key */
	sig = base64url_decode(parts[2], strlen(parts[2]), &sig_len);
	g_assert_cmpint(gnutls_privkey_init(&key), ==, 0);
	g_assert_cmpint(gnutls_privkey_import_x509(key, x509, 0), ==, 0);
	g_assert_cmpint(gnutls_pubkey_init(&pub), ==, 0);
	g_assert_cmpint(gnutls_pubkey_import_privkey(pub, key, 0, 0), ==, 0);
	data.data = (unsigned char *)jwt;
	data.size = strlen(parts[0]) + 1 + strlen(parts[1]);
	if (algorithm == GNUTLS_PK_ECDSA) {
		gnutls_datum_t r = {(unsigned char *)sig, 32};
		gnutls_datum_t s = {(unsigned char *)sig + 32, 32};
		g_assert_cmpuint(sig_len, ==, 64);
		g_assert_cmpint(gnutls_encode_rs_value(&signature, &r, &s), ==, 0);
		g_assert_cmpint(
		    gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &signature),
		    >=,
		    0);
		gnutls_free(signature.data);
	} else {
		signature.data = (unsigned char *)sig;
		signature.size = sig_len;
		g_assert_cmpint(
		    gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &signature),
		    >=,
		    0);
	}
	gnutls_pubkey_deinit(pub);
	gnutls_privkey_deinit(key);
	gnutls_x509_privkey_deinit(x509);
}

static void
test_jwt_es256(void)
{
	check_jwt(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), "\"ES256\"");
}

static void
test_jwt_rs256(void)
{
	check_jwt(GNUTLS_PK_RSA, 2048, "\"RS256\"");
}

static void
test_jwt_bad_keys(void)
{
	gnutls_x509_privkey_t x509 = NULL;
	gnutls_datum_t pem = {NULL, 0};
	g_autofree gchar *p384 = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *jwt = NULL;

	jwt = confab_mcp_oauth_jwt_sign("-----BEGIN PRIVATE KEY-----\nnope\n", "c", "a", &error);
	g_assert_null(jwt);
	g_assert_nonnull(strstr(error->message, "client_private_key"));
	g_clear_error(&error);

	g_assert_cmpint(gnutls_x509_privkey_init(&x509), ==, 0);
	g_assert_cmpint(
	    gnutls_x509_privkey_generate(x509,
					 GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1),
					 0),
	    ==,
	    0);
	g_assert_cmpint(gnutls_x509_privkey_export2_pkcs8(x509, GNUTLS_X509_FMT_PEM, NULL, 0, &pem),
			==,
			0);
	p384 = g_strndup((const gchar *)pem.data, pem.size);
	gnutls_free(pem.data);
	gnutls_x509_privkey_deinit(x509);
	jwt = confab_mcp_oauth_jwt_sign(p384, "c", "a", &error);
	g_assert_null(jwt);
	g_assert_nonnull(strstr(error->message, "P-256"));
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/confab/mcp-oauth-parts/discovery-order", test_discovery_order);
	g_test_add_func("/confab/mcp-oauth-parts/urls-and-resources", test_urls_and_resources);
	g_test_add_func("/confab/mcp-oauth-parts/scopes-and-challenges",
			test_scopes_and_challenges);
	g_test_add_func("/confab/mcp-oauth-parts/jwt-es256", test_jwt_es256);
	g_test_add_func("/confab/mcp-oauth-parts/jwt-rs256", test_jwt_rs256);
	g_test_add_func("/confab/mcp-oauth-parts/jwt-bad-keys", test_jwt_bad_keys);
	return g_test_run();
}
