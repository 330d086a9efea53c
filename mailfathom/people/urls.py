"""Routes of the people pages, under /people/ (mailfathom.urls)."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from mailfathom.people import views
from mailfathom.people.forms import PersonLoginForm

app_name = "people"

urlpatterns = [
    path("search/", views.search_page, name="search"),
    path("ask/", views.ask_page, name="ask"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="people/login.html",
            authentication_form=PersonLoginForm,
            redirect_authenticated_user=True,
            next_page=reverse_lazy("people:search"),
            extra_context={
                "title": "Log in to search your mail",
                "site_header": "MailFathom",
                "site_title": "MailFathom",
            },
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("people:login")), name="logout"),
]
