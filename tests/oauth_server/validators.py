"""The toolkit's validator, with the standard `email` and `preferred_username` claims."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    """Put `email` and `preferred_username` in ID tokens and userinfo for the `email` scope."""

    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "preferred_username": "email"}

    def get_additional_claims(self):
        return {
            "email": lambda request: request.user.email,
            "preferred_username": lambda request: request.user.get_username(),
        }
