/*
 * app.c - server-wide helpers on struct srv_app.
 */
#include "app.h"

void app_wake_scheduler(struct srv_app *app)
{
    pthread_mutex_lock(&app->wake_lock);
    app->wake_pending = 1;
    pthread_cond_signal(&app->wake_cond);
    pthread_mutex_unlock(&app->wake_lock);
}
