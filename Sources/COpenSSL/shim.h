#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// OpenSSL spells these as macros over SSL_ctrl and BIO_set_flags, which Swift cannot call:
// one thin function each, so the Swift side reads no control codes.

static inline long larder_ssl_ctx_set_min_tls12(SSL_CTX *context) {
    return SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

static inline long larder_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline void larder_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }

static inline void larder_bio_set_retry_write(BIO *bio) { BIO_set_retry_write(bio); }

static inline void larder_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }

// A peer that closes without close_notify (Redis does) ends the stream as a plain close would;
// RESP replies carry their own lengths, so a cut reply is still caught by the reply reader.
static inline void larder_ssl_ctx_ignore_unexpected_eof(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
}
